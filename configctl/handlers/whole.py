"""The rule shared by topics, quotas and IPs: a stored config takes effect whole, or not at all."""

from __future__ import annotations

from collections.abc import Mapping

from configctl.entities import Entity, EntityType
from configctl.handlers.base import POISON, Admission, Problem, handler_for
from configctl.handlers.validate import validate_config

_MEMO_LIMIT = 10_000
"""Distinct (type, key, value) checks remembered; a fleet's 100,000 topics share a few hundred."""

_key_problems: dict[tuple[EntityType, str, str], tuple[str, ...]] = {}


def admit_whole(
    entity: Entity, stored: Mapping[str, str], change_number: int | None, *, memo: bool = False
) -> Admission:
    """The stored config when every key passes validation; else refused, naming every problem.

    ``memo``: the family's per-key verdicts depend on the key and value only, never on the
    entity's name (topics, IPs), so each distinct pair is checked once.
    """
    problems = _problems(entity, stored, memo)
    if problems:
        return Admission(None, (Problem(POISON, entity.path, change_number, "; ".join(problems)),))
    return Admission(dict(stored))


def _problems(entity: Entity, stored: Mapping[str, str], memo: bool) -> list[str]:
    """:func:`validate_config`'s answer, with each distinct key and value checked once.

    A full load validates 100,000 topic configs that mostly repeat a few values (retention of a
    week, compaction): each (key, value) pair's own check (the family's ``check_key``, the step
    validate_config takes per key) is remembered, and the rules across keys (``own_rules``) run
    on each whole config, as validate_config runs them: the same problems in the same order.
    """
    if not memo:
        return validate_config(entity, stored)
    handler = handler_for(entity)
    etype = entity.type
    problems: list[str] = []
    for name, raw in stored.items():
        if type(raw) is not str:  # remembered by text only: anything else is validate_config's to word
            return validate_config(entity, stored)
        seen = (etype, name, raw)
        found = _key_problems.get(seen)
        if found is None:
            checked: list[str] = []
            handler.check_key(entity, name, raw, False, checked)
            found = tuple(checked)
            if len(_key_problems) >= _MEMO_LIMIT:
                _key_problems.clear()
            _key_problems[seen] = found
        if found:
            problems.extend(found)
    problems.extend(handler.own_rules(stored))
    return problems
