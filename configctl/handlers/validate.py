"""A whole config of one entity, validated by its family: every problem in one go.

The entity's family handler checks each key (:meth:`~configctl.handlers.base.FamilyHandler.check_key`,
which calls the library in :mod:`configctl.validation`) and adds its rules between keys
(:meth:`~configctl.handlers.base.FamilyHandler.own_rules`). The write path, canaries, desired-state
files and the listener's admission all validate through here, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from configctl.entities import Entity
from configctl.errors import ValidationFailed
from configctl.handlers.base import handler_for


def validate_config(
    entity: Entity,
    config: Mapping[str, str],
    *,
    changed: Iterable[str] | None = None,
    allow_custom: bool = False,
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
        handler.check_key(entity, name, config[name], allow_custom, problems)
    problems.extend(handler.own_rules(config))
    return problems


def check(
    entity: Entity,
    config: Mapping[str, str],
    *,
    changed: Iterable[str] | None = None,
    allow_custom: bool = False,
) -> None:
    """Raise :class:`ValidationFailed` carrying every problem :func:`validate_config` finds."""
    problems = validate_config(entity, config, changed=changed, allow_custom=allow_custom)
    if problems:
        raise ValidationFailed(problems)
