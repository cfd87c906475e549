"""An entity's config as every document shows it: sorted, its sensitive values masked.

Which keys are sensitive is the catalogue's rule for the entity's type
(:func:`configctl.catalogue.is_sensitive`); the mask itself is :data:`configctl.secrets.MASK`.
One home, so ``describe``, ``history`` and ``rollout show`` can never mask differently.
"""

from __future__ import annotations

from collections.abc import Mapping

from configctl import catalogue
from configctl.entities import Entity
from configctl.secrets import mask_config


def masked(entity: Entity, config: Mapping[str, str]) -> dict[str, str]:
    """The config, sorted, with sensitive values replaced by the mask."""
    return mask_config(
        dict(sorted(config.items())), lambda key: catalogue.is_sensitive(entity.schema_type, key)
    )
