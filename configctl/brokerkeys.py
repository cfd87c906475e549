"""One dynamic broker key as Kafka's ``DynamicBrokerConfig.validateConfigs`` checks it.

Listener prefixes (lower-case listener and SASL mechanism names), a known key (or a plugin's
custom one, when allowed), its update mode and ``<default>`` placement (:mod:`configctl.placement`),
then the value checks of the (base) key (:mod:`configctl.validation`). The write side refuses
what this finds (the broker family's handler calls it for each key), and every reader drops the
key from a dynamic layer for the same reason (:mod:`configctl.precedence` screens each layer with
it), so a key configctl writes is never one a broker ignores. Pure.
"""

from __future__ import annotations

from typing import Any

from configctl import catalogue, placement, validation
from configctl.catalogue import LISTENER_PREFIX
from configctl.entities import EntityType
from configctl.errors import shown as echo


def check_key(name: str, raw: Any, *, at_default: bool, allow_custom: bool, problems: list[str]) -> None:
    """Append every problem of broker key ``name`` set to ``raw`` at ``brokers/<id>``, or at
    ``brokers/<default>`` when ``at_default``; ``allow_custom`` takes a key the catalogue does not
    know (a plugin's), checked for placement alone."""
    listener, base = catalogue.split_listener_prefix(name)
    prefixed = listener is not None
    if listener is not None:
        if listener != listener.lower():
            fixed = name.replace(f"{LISTENER_PREFIX}{listener}.", f"{LISTENER_PREFIX}{listener.lower()}.", 1)
            problems.append(f"{name}: the listener name in a listener prefix must be lower case ({fixed!r})")
        config = name[len(LISTENER_PREFIX) + len(listener) + 1 :]
        if config != base:
            mechanism = config[: len(config) - len(base) - 1]
            if mechanism != mechanism.lower():
                problems.append(f"{name}: the SASL mechanism in a listener prefix must be lower case")
    key = catalogue.lookup(EntityType.BROKERS, name)
    if key is None and not allow_custom:
        pool = catalogue.known_names(EntityType.BROKERS)
        if prefixed:
            message = f"unknown broker config {echo(name)}"
            guess = validation.closest(base, pool)
            if guess is not None:
                message += f" (did you mean {name[: len(name) - len(base)] + guess!r}?)"
        else:
            message = validation.unknown_key("broker", name, pool)
        problems.append(message + "; use --allow-custom-config for a plugin's custom key")
        return

    # Update mode and placement: at most one sentence per key, the most fundamental one.
    misplaced = placement.problem(name, at_default=at_default)
    if misplaced is not None:
        problems.append(misplaced)
    if key is not None:
        validation.check_value(EntityType.BROKERS, name, key, raw, problems)


def problem(name: str, raw: str, *, at_default: bool) -> str | None:
    """Why a broker drops key ``name`` set to ``raw`` from a dynamic layer (custom keys allowed),
    None when it takes it: exactly what the write side would refuse."""
    found: list[str] = []
    check_key(name, raw, at_default=at_default, allow_custom=True, problems=found)
    return "; ".join(found) if found else None
