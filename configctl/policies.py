"""The operator's own rules: policy plugins that see a change's effective config and may refuse it.

Kafka's ``AlterConfigPolicy`` sees only the keys of the request (KIP-935 asks for more); a
configctl policy sees the result: the entity's stored config before and after, and its
*effective* config before and after (every layer merged, as the listener resolves it), so a
rule such as "no topic may retain less than a day, whoever sets it" is one comparison.

A policy is any object with ``check(request)`` (raise to refuse: the message is the reason), or a
plain function taking the request. They come from the entry-point group ``configctl.policies``
and from ``CONFIGCTL_POLICIES`` (comma-separated ``module:attribute``). Every write path calls
them: ``alter``, ``apply`` and ``rollback``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from configctl.entities import Entity
from configctl.errors import InvalidInput, one_line
from configctl.precedence import EffectiveValue
from configctl.settings import BY_NAME, environment_value

ENTRY_POINT_GROUP = "configctl.policies"
ENV = BY_NAME["policies"].env  # CONFIGCTL_POLICIES


@dataclass(frozen=True)
class PolicyRequest:
    """One entity's change, as a policy sees it."""

    entity: Entity
    stored_before: Mapping[str, str]
    stored_after: Mapping[str, str]
    before: Mapping[str, EffectiveValue]
    after: Mapping[str, EffectiveValue]
    reason: str
    identity: str

    @property
    def changed(self) -> frozenset[str]:
        """Names whose effective value differs."""
        names = set(self.before) | set(self.after)
        return frozenset(
            n
            for n in names
            if (self.before.get(n) and self.before[n].value) != (self.after.get(n) and self.after[n].value)
        )

    def value(self, name: str) -> str | None:
        """The effective value of ``name`` after the change."""
        found = self.after.get(name)
        return None if found is None else found.value


@dataclass(frozen=True)
class LoadedPolicy:
    name: str
    check: Callable[[PolicyRequest], Any]


def _load(target: Any, origin: str) -> LoadedPolicy:
    if isinstance(target, type):
        try:
            target = target()
        except Exception as exc:
            raise InvalidInput(f"policy {origin}: cannot create it: {one_line(exc)}") from None
    check = getattr(target, "check", None) or (target if callable(target) else None)
    if not callable(check):
        raise InvalidInput(f"policy {origin} has no check(request) method")
    return LoadedPolicy(str(getattr(target, "name", "") or origin), check)


def _from_spec(spec: str) -> LoadedPolicy:
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise InvalidInput(f"{ENV}: {spec!r} must look like module:attribute")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise InvalidInput(f"cannot load policy {spec!r}: {one_line(exc)}") from None
    return _load(target, spec)


@cache
def _installed() -> tuple[LoadedPolicy, ...]:
    loaded = []
    for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            loaded.append(_load(entry.load(), entry.name))
        except InvalidInput:
            raise
        except Exception as exc:
            raise InvalidInput(f"cannot load policy {entry.name} ({entry.value}): {one_line(exc)}") from None
    return tuple(loaded)


def load() -> list[LoadedPolicy]:
    """Every configured policy: installed entry points, then ``CONFIGCTL_POLICIES``."""
    specs = [s for s in (environment_value("policies") or "").split(",") if s.strip()]
    return [*_installed(), *(_from_spec(s) for s in specs)]


def refusals(requests: Iterable[PolicyRequest], policies: Iterable[LoadedPolicy]) -> list[str]:
    """One sentence per refusal: ``<entity>: policy <name> refuses: <reason>``."""
    found = []
    chosen = list(policies)
    for request in requests:
        for policy in chosen:
            try:
                answer = policy.check(request)
            except Exception as exc:
                found.append(
                    f"{request.entity.label}: policy {policy.name} refuses: {one_line(exc) or 'refused'}"
                )
                continue
            if isinstance(answer, str) and answer:
                found.append(f"{request.entity.label}: policy {policy.name} refuses: {one_line(answer)}")
    return found
