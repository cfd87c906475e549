"""A broker's loggers: ``broker-loggers/<broker id>``, Kafka's ``--entity-type broker-loggers``.

Each key is a log4j logger's name, its value the logger's level (ConfigResource BROKER_LOGGER,
named by the broker's id, on Kafka 3.9 and 4 alike). Unlike every other family the levels are
not stored anywhere: the broker keeps them in its memory, so only that broker can be asked or
told (through the Admin API, sent to that very broker), and a restart of the broker forgets them
(its log4j configuration file rules again). A level set moves that logger and nothing else.

Kafka's checks (``RuntimeLoggerManager.validateLogLevelConfigs``, 3.9; the same rules in 4.4):
a level is one of ``LogLevelConfig.VALID_LOG_LEVELS``, spelled exactly (``DEBUG``, not
``debug``); a logger must exist on that broker (known to the broker alone: the Admin API edge
checks the names against its answer, as Kafka's ConfigCommand does: "Invalid broker logger(s)");
the root logger's level may be changed but not deleted. Deleting a logger's level makes it
inherit again (the broker then reports its parent's level, the root logger's at the top).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from configctl import agreement, catalogue
from configctl.entities import Entity, EntityType
from configctl.handlers.base import Admission, BrokerView, Decrypt, FamilyHandler, Moved, Reads, changed_names
from configctl.handlers.sidecar import Asker, Model
from configctl.handlers.whole import admit_whole
from configctl.precedence import EffectiveValue, Synonym
from configctl.znodes import HistoryRecord

DYNAMIC_BROKER_LOGGER_CONFIG = "DYNAMIC_BROKER_LOGGER_CONFIG"
"""The source a broker reports for each of its loggers (ConfigSource 6)."""


class BrokerLoggerHandler(FamilyHandler):
    types = (EntityType.BROKER_LOGGERS,)
    family = "broker-loggers"
    independent = True

    def follows(self, entity: Entity, broker_id: int) -> bool:
        """Only the broker itself runs its loggers."""
        return int(entity.name) == broker_id

    def admit(
        self, entity: Entity, stored: Mapping[str, str], *, change_number: int | None, decrypt: Decrypt | None
    ) -> Admission:
        return admit_whole(entity, stored, change_number)

    def effective(self, entity: Entity, view: BrokerView) -> dict[str, EffectiveValue]:
        """Each logger at the level the broker reports: no layer below it that configctl sees."""
        values = {}
        for name, level in view.configs.get(entity.path, {}).items():
            mine = Synonym(name, level, DYNAMIC_BROKER_LOGGER_CONFIG)
            values[name] = EffectiveValue(name, level, DYNAMIC_BROKER_LOGGER_CONFIG, (mine,), False)
        return values

    def moved(
        self, entity: Entity, before: BrokerView, after: BrokerView, wanted: frozenset[str]
    ) -> list[Moved]:
        old, new = self.effective(entity, before), self.effective(entity, after)
        changed = changed_names(old, new)
        return [Moved(entity, new, changed)] if changed & wanted else []

    def reads(self, entity: Entity, broker_id: int) -> Reads:
        return Reads(paths=(entity.path,))

    def label(self, entity: Entity) -> str:
        return "broker-logger"

    def check_key(self, entity: Entity, name: str, raw: Any, allow_custom: bool, problems: list[str]) -> None:
        """A level Kafka takes (exactly as it spells them); the logger's name is the broker's to know."""
        if not name.strip():
            problems.append("a logger name must not be empty")
        elif raw not in levels():
            problems.append(
                f"{name}: {raw!r} is not a log level Kafka takes (one of {', '.join(levels())}, in upper case)"
            )

    def disagreements(
        self, entity: Entity, keys: frozenset[str], broker_id: int, model: Model, broker: Asker
    ) -> list[agreement.Mismatch]:
        """No listener follows a broker's loggers (nothing is stored for it to apply)."""
        return []


@cache
def levels() -> tuple[str, ...]:
    """The levels Kafka takes for a logger (``LogLevelConfig.VALID_LOG_LEVELS``, the schema's)."""
    return tuple(catalogue.schema(EntityType.BROKER_LOGGERS)["x-log-levels"])


@cache
def root_logger() -> str:
    """The root logger's name as the broker reports it (its level cannot be deleted)."""
    return str(catalogue.schema(EntityType.BROKER_LOGGERS)["x-root-logger"])


def levels_hold(expected: Mapping[str, str], reported: Mapping[str, str]) -> bool:
    """Whether a broker that reports ``reported`` still runs every logger of ``expected`` at its level.

    A broker reports every logger it has, and makes new ones as its code first logs through them
    (each at the level it inherits): a logger that appeared since is not a change, so only the
    loggers of ``expected`` are compared. One whose level was deleted is not in ``expected`` (the
    broker reports it on, at what it inherits now)."""
    return all(reported.get(name) == level for name, level in expected.items())


def levels_taken(config: Mapping[str, str], previous: Mapping[str, str], reported: Mapping[str, str]) -> bool:
    """Whether a broker that reports ``reported`` runs every level a write from ``previous`` to
    ``config`` set. Only those: every logger without a level of its own inherits (a root logger
    set to WARN moves every such logger to WARN on Kafka 4), and one whose level was deleted
    inherits again, so neither has a level to check."""
    return all(reported.get(name) == level for name, level in config.items() if previous.get(name) != level)


def history_version(records: Sequence[HistoryRecord], reported: Mapping[str, str]) -> int:
    """The version configctl's history gives a broker's loggers as the broker reports them: the
    newest record's while its levels hold (:func:`levels_hold`), one past it once they do not (a
    write outside configctl, or the broker restarted and forgot them); 0 with no record (a broker
    always has loggers, so they exist from the start)."""
    if not records:
        return 0
    newest = max(records, key=lambda r: (r.version, r.time_ms))
    if newest.config is not None and levels_hold(newest.config, reported):
        return newest.version
    return newest.version + 1
