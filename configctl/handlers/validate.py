"""A whole config of one entity, validated by its family: every problem in one go.

The entity's family handler checks each key (:meth:`~configctl.handlers.base.FamilyHandler.check_key`,
which calls the library in :mod:`configctl.validation`) and adds its rules between keys
(:meth:`~configctl.handlers.base.FamilyHandler.own_rules`). The write path, canaries, desired-state
files and the listener's admission all validate through here, so they cannot disagree.

``release`` is the Kafka release the target cluster runs (the store's ``kafka_release()``): on
Kafka 4 a key it removed is refused and a key only it has is checked by its 4.4 facts
(:func:`configctl.validation.check_release_key`); None or 3.x: Kafka 3.9's rules, unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from configctl.entities import Entity
from configctl.errors import ValidationFailed
from configctl.handlers.base import handler_for
from configctl.validation import check_release_key


def validate_config(
    entity: Entity,
    config: Mapping[str, str],
    *,
    changed: Iterable[str] | None = None,
    allow_custom: bool = False,
    release: str | None = None,
) -> list[str]:
    """Every problem with ``config`` as the complete config of ``entity``; empty when it is valid.

    ``changed`` limits the per-key checks (unknown key, type, range, update mode, placement) to
    the keys being written, so an odd value already in ZooKeeper does not block an unrelated
    change; cross-field rules always run on the whole of ``config``. ``allow_custom`` accepts
    unknown broker keys (a plugin's custom config), unchecked except for ``<default>`` placement.
    """
    if isinstance(changed, str):
        changed = [changed]
    selected = config.keys() if changed is None else [k for k in dict.fromkeys(changed) if k in config]
    handler = handler_for(entity)
    problems: list[str] = []
    for name in selected:
        if not check_release_key(entity, name, config[name], release, problems):
            handler.check_key(entity, name, config[name], allow_custom, problems)
    problems.extend(handler.own_rules(config))
    return problems


def check(
    entity: Entity,
    config: Mapping[str, str],
    *,
    changed: Iterable[str] | None = None,
    allow_custom: bool = False,
    release: str | None = None,
) -> None:
    """Raise :class:`ValidationFailed` carrying every problem :func:`validate_config` finds."""
    problems = validate_config(entity, config, changed=changed, allow_custom=allow_custom, release=release)
    if problems:
        raise ValidationFailed(problems)
