"""Broker passwords as the broker runs them: stored encrypted (Kafka's ``PasswordEncoder``),
decrypted with server.properties' ``password.encoder.secret``, or with its
``password.encoder.old.secret`` while the secret is being rotated."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from configctl.errors import InvalidInput
from configctl.secrets import PasswordEncoder

log = logging.getLogger("configctl.listener")

PASSWORD_SECRET = "password.encoder.secret"
OLD_PASSWORD_SECRET = "password.encoder.old.secret"


class PasswordDecryptor:
    """Decrypts with the secrets of one broker's static config; an unusable secret is logged
    once, here, and left out."""

    def __init__(self, static_config: Mapping[str, str]) -> None:
        self._encoders: list[PasswordEncoder] = []
        for key in (PASSWORD_SECRET, OLD_PASSWORD_SECRET):
            secret = static_config.get(key)
            if secret:
                try:
                    self._encoders.append(PasswordEncoder(secret))
                except InvalidInput as exc:
                    log.error("server.properties %s is unusable: %s", key, exc)

    def decrypt(self, name: str, value: str) -> str | None:
        """``value`` of key ``name`` decrypted; None when no secret decrypts it."""
        for encoder in self._encoders:
            try:
                return encoder.decode(value, name=name)
            except InvalidInput:
                continue
        return None
