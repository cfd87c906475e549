"""server.properties as the broker state node shows it: masked, with keyed digests of its secrets.

Worked out once, as server.properties does not change while the listener runs, rather than at
every state node write (sorting, masking and an HMAC per secret, at every change).
"""

from __future__ import annotations

from collections.abc import Mapping

from configctl.digests import published_digest
from configctl.handlers import BROKER
from configctl.secrets import mask_config


class PublishedStaticConfig:
    """The masked static config and its secrets' digests, kept for the config and key they were
    worked out from."""

    def __init__(self) -> None:
        self._cache: tuple[Mapping[str, str], dict[str, str], dict[str, str], bytes | None] | None = None

    def masked(self, static_config: Mapping[str, str], key: bytes | None) -> dict[str, str]:
        """``static_config``, sorted, its secrets masked."""
        return dict(self._worked_out(static_config, key)[0])

    def digests(self, static_config: Mapping[str, str], key: bytes | None) -> dict[str, str]:
        """Keyed digests (``hmac-sha256:``) of the sensitive static values, so drift in them is
        visible without the values; none without the fleet's digest ``key``: the state node is
        world-readable, and a plain SHA-256 of ``password.encoder.secret`` can be guessed offline."""
        return dict(self._worked_out(static_config, key)[1])

    def _worked_out(
        self, static_config: Mapping[str, str], key: bytes | None
    ) -> tuple[dict[str, str], dict[str, str]]:
        cached = self._cache
        if cached is None or cached[0] is not static_config or cached[3] != key:
            masked = mask_config(dict(sorted(static_config.items())), _sensitive)
            pairs = ((k, published_digest(v, key)) for k, v in sorted(static_config.items()) if _sensitive(k))
            cached = static_config, masked, {k: d for k, d in pairs if d is not None}, key
            self._cache = cached
        return cached[1], cached[2]


def _sensitive(name: str) -> bool:
    return BROKER.is_password(name)
