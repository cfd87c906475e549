"""The rule shared by topics, quotas and IPs: a stored config takes effect whole, or not at all."""

from __future__ import annotations

from collections.abc import Mapping

from configctl.entities import Entity
from configctl.handlers.base import POISON, Admission, Problem
from configctl.validation import validate_config


def admit_whole(entity: Entity, stored: Mapping[str, str], change_number: int | None) -> Admission:
    """The stored config when every key passes validation; else refused, naming every problem."""
    problems = validate_config(entity, stored)
    if problems:
        return Admission(None, (Problem(POISON, entity.path, change_number, "; ".join(problems)),))
    return Admission(dict(stored))
