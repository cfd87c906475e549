"""An entity's config as every document shows it: sorted, its sensitive values masked.

Which keys are sensitive is the catalogue's rule for the entity's type
(:func:`configctl.catalogue.is_sensitive`); the mask itself is :data:`configctl.secrets.MASK`.
One home, so ``describe``, ``history`` and ``rollout show`` can never mask differently.
"""

from __future__ import annotations

from collections.abc import Mapping

from configctl import secrets
from configctl.entities import Entity


def masked(entity: Entity, config: Mapping[str, str]) -> dict[str, str]:
    """The config, sorted, with sensitive values replaced by the mask (:func:`configctl.secrets.masked`)."""
    return secrets.masked(entity, dict(sorted(config.items())))
