"""A rollout's record: what it plans, how far it got, and the exact bytes that undo it. Pure.

The record (``/configctl/rollouts/<id>``) is what makes a rollout survive the operator's laptop:
whoever reads it (``configctl rollout show|abort|resume``) knows the plan (:class:`Planned`, in
``plan-NNNN`` chunks), the step reached (``state`` and ``step``) and, for every entity already
written, its previous bytes (:class:`Undo`, in ``undo-NNNN`` chunks that are created by the very
multi that wrote those entities, so an undo is on record exactly when its write landed).

States: ``preparing`` (the plan is being recorded; nothing written), ``running`` (a process works
on it), ``stopped`` (a wave failed and was left as it is, or a concurrent writer stopped it),
``aborting`` (an undo is under way); then finished: ``promoted`` (a canary),
``completed`` (waves), ``aborted`` (every entity written was restored).

Also a rollout as a store gives it back (:class:`Loaded`, :class:`Listed`) and what stops this
process moving one on (:class:`TakenOver`, :class:`EntitiesMoved`): the words of
:class:`configctl.store.Rollouts`, whichever store keeps the record.

A record is read strictly (:meth:`Record.decode`: every field of the type and range its writer
gives it), since a value of the wrong type would otherwise surface as a traceback, or a loop
bound, deep in a rollout. A record that cannot be read fails closed: it still holds its claims
(whatever it may have written stays protected), and only ``rollout abort ID --force`` finishes
it, from what can be read of it (:meth:`Record.salvage`, :meth:`UndoChunk.salvage`).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from configctl.entities import Entity
from configctl.errors import InvalidInput, one_line
from configctl.rollout.parsing import MAX_DURATION_SECONDS, MAX_WAVES
from configctl.store.vocabulary import version_after
from configctl.timeref import MAX_MS, MIN_MS
from configctl.znodes import RolloutZNode, is_json_int

FORMAT = "configctl-rollout/1"
CANARY = "canary"
WAVES = "waves"
KINDS = (CANARY, WAVES)

PREPARING = "preparing"
RUNNING = "running"
STOPPED = "stopped"
ABORTING = "aborting"
PROMOTED = "promoted"
COMPLETED = "completed"
ABORTED = "aborted"
OPEN_STATES = (PREPARING, RUNNING, STOPPED, ABORTING)
FINISHED_STATES = (PROMOTED, COMPLETED, ABORTED)

MAX_EVENTS = 200
"""Events kept in a record (oldest dropped): enough for any sensible rollout, bounded for a silly one."""


@dataclass(frozen=True)
class Options:
    """How each step is judged: the soak, the health check, and how long brokers get to apply it."""

    soak_seconds: float = 0.0
    check: str | None = None
    check_timeout_seconds: float = 60.0
    wait_seconds: float = 60.0
    revert_on_failure: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "soak_seconds": self.soak_seconds,
            "check": self.check,
            "check_timeout_seconds": self.check_timeout_seconds,
            "wait_seconds": self.wait_seconds,
            "revert_on_failure": self.revert_on_failure,
        }

    @classmethod
    def from_json(cls, data: Any) -> Options:
        fields = Fields(_mapping(data), strict=True)
        return cls(
            soak_seconds=fields.get("soak_seconds", _seconds, 0.0),
            check=fields.get("check", _text, None) or None,
            check_timeout_seconds=fields.get("check_timeout_seconds", _seconds, 60.0) or 60.0,
            wait_seconds=fields.get("wait_seconds", _seconds, 60.0) or 60.0,
            revert_on_failure=fields.get("revert_on_failure", _flag, False),
        )


@dataclass(frozen=True)
class Planned:
    """One write a rollout plans: the entity's config becomes ``target`` in ``wave`` (1-based), and
    only if the node is still at ``expected_version`` (-1: absent) when it goes out."""

    entity: Entity
    wave: int
    target: dict[str, str]
    expected_version: int

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.entity.path,
            "wave": self.wave,
            "target": dict(sorted(self.target.items())),
            "expected_version": self.expected_version,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Planned:
        return cls(
            Entity.from_path(str(data["path"])),
            int(data["wave"]),
            {str(k): str(v) for k, v in dict(data["target"]).items()},
            int(data["expected_version"]),
        )


@dataclass(frozen=True)
class Undo:
    """What restores one written entity: its exact previous bytes (None: there was no node) at
    ``previous_version`` (-1: absent), and the version the rollout's write left it at
    (-1: the write removed the node, as Kafka does with an emptied quota)."""

    entity: Entity
    previous: bytes | None
    previous_version: int
    written_version: int

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "path": self.entity.path,
            "previous_version": self.previous_version,
            "written_version": self.written_version,
        }
        document.update(_bytes_json(self.previous))
        return document

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Undo:
        return cls(
            Entity.from_path(str(data["path"])),
            _bytes_from_json(data),
            int(data["previous_version"]),
            int(data["written_version"]),
        )

    def still_ours(self, version: int | None) -> bool:
        """Is the node (at ``version``, None: absent) still exactly as the rollout's write left it?

        An emptied quota node is removed unless it has children (a user's clients), in which case
        it stays, one version on: both are what the write left.
        """
        if self.written_version < 0:
            return version is None or version == version_after(self.previous_version)
        return version == self.written_version


def _bytes_json(data: bytes | None) -> dict[str, Any]:
    """Bytes as readable text when they are UTF-8 (a config node nearly always is), else base64."""
    if data is None:
        return {"previous": None, "encoding": None}
    try:
        return {"previous": data.decode("utf-8"), "encoding": "utf-8"}
    except UnicodeDecodeError:
        return {"previous": base64.b64encode(data).decode("ascii"), "encoding": "base64"}


def _bytes_from_json(data: Mapping[str, Any]) -> bytes | None:
    text, encoding = data.get("previous"), data.get("encoding")
    if text is None:
        return None
    if encoding == "base64":
        try:
            return base64.b64decode(str(text), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("rollout undo entry holds invalid base64") from None
    return str(text).encode("utf-8")


@dataclass(frozen=True)
class UndoChunk:
    """One ``undo-NNNN`` node: the entities one multi wrote (in wave ``wave``) and their undo."""

    index: int
    wave: int
    entries: tuple[Undo, ...]

    def to_json(self) -> dict[str, Any]:
        return {"wave": self.wave, "entries": [u.to_json() for u in self.entries]}

    @classmethod
    def from_json(cls, index: int, data: Mapping[str, Any]) -> UndoChunk:
        return cls(index, int(data.get("wave") or 0), tuple(Undo.from_json(u) for u in data["entries"]))

    @classmethod
    def salvage(cls, index: int, data: bytes) -> tuple[UndoChunk, list[str]]:
        """What can be read of an undo chunk that cannot be read whole: its readable entries, and
        what could not be read (the entity path of an unreadable entry when it has one)."""
        try:
            entries = RolloutZNode.decode(data).get("entries")
        except InvalidInput:
            entries = None
        if not isinstance(entries, list):
            return cls(index, 0, ()), ["the entities of a whole undo chunk (unknown)"]
        kept: list[Undo] = []
        lost: list[str] = []
        for entry in entries:
            try:
                kept.append(Undo.from_json(entry))
            except (KeyError, TypeError, ValueError, InvalidInput):
                path = entry.get("path") if isinstance(entry, Mapping) else None
                lost.append(one_line(path, 200) if isinstance(path, str) else "an entity of unknown path")
        return cls(index, 0, tuple(kept)), lost


@dataclass(frozen=True)
class CanaryPlan:
    """A canary's own facts: its brokers, the change, and what ``brokers/<default>`` becomes."""

    brokers: tuple[int, ...]
    add: dict[str, str]
    default_target: dict[str, str]
    default_version: int

    def to_json(self) -> dict[str, Any]:
        return {
            "brokers": list(self.brokers),
            "add": dict(sorted(self.add.items())),
            "default_target": dict(sorted(self.default_target.items())),
            "default_version": self.default_version,
        }

    @classmethod
    def from_json(cls, data: Any) -> CanaryPlan:
        fields = Fields(_mapping(data), strict=True)
        return cls(
            tuple(fields.get("brokers", _list_of(_count), None, required=True)),
            fields.get("add", _config, None, required=True),
            fields.get("default_target", _config, None, required=True),
            fields.get("default_version", _version, None, required=True),
        )


@dataclass(frozen=True)
class Record:
    """The record node's document."""

    id: str
    kind: str
    state: str
    created_ms: int
    updated_ms: int
    identity: str
    reason: str
    options: Options
    waves: int
    entities: tuple[str, ...]
    """Entities it touches that its plan does not list (a canary's ``brokers/<default>``); a plan can
    be far larger than one node, so its own entities are only in its ``plan-NNNN`` chunks."""
    entity_count: int
    plan_chunks: int
    baseline_change: int | None
    step: dict[str, Any] = field(default_factory=dict)
    canary: CanaryPlan | None = None
    failure: str | None = None
    events: tuple[dict[str, Any], ...] = ()
    undo_chunks: int = 0
    """Undo chunks ever written (the next one's index); the chunks still present are what is left to undo."""

    @property
    def open(self) -> bool:
        return self.state in OPEN_STATES

    @property
    def wave(self) -> int:
        """The wave the rollout is at (1-based; a canary is one wave)."""
        return int(self.step.get("wave") or 1)

    def with_event(self, at_ms: int, text: str, **changes: Any) -> Record:
        """This record, changed, with ``text`` appended to its events (at most :data:`MAX_EVENTS` kept)."""
        events = (*self.events, {"at_ms": at_ms, "text": text})[-MAX_EVENTS:]
        return replace(self, updated_ms=at_ms, events=events, **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "step": dict(self.step),
            "created_ms": self.created_ms,
            "updated_ms": self.updated_ms,
            "identity": self.identity,
            "reason": self.reason,
            "options": self.options.to_json(),
            "waves": self.waves,
            "entities": list(self.entities),
            "entity_count": self.entity_count,
            "plan_chunks": self.plan_chunks,
            "undo_chunks": self.undo_chunks,
            "baseline_change": self.baseline_change,
            "canary": self.canary.to_json() if self.canary else None,
            "failure": self.failure,
            "events": list(self.events),
        }

    def encode(self) -> bytes:
        return RolloutZNode.encode(self.to_json())

    @classmethod
    def decode(cls, data: bytes) -> Record:
        """The record node's document, every field checked (InvalidInput, one line, on the first wrong one)."""
        document = RolloutZNode.decode(data)
        if document.get("format") != FORMAT:
            raise InvalidInput(
                f"rollout record has format {one_line(repr(document.get('format')), 60)}, not {FORMAT!r}"
            )
        return cls._read(Fields(document, strict=True), None)

    @classmethod
    def salvage(cls, rollout_id: str, data: bytes) -> tuple[Record, list[str]]:
        """What can be read of a record that cannot be read whole, and what could not.

        Each field that is missing or wrong takes a default that keeps the rollout open (so it
        keeps its claims until it is finished) and is named in the list; the id is the node's.
        """
        try:
            document = RolloutZNode.decode(data)
        except InvalidInput:
            document = {}
        fields = Fields(document, strict=False)
        if document.get("format") != FORMAT:
            fields.problems.append("format")
        if document.get("id") != rollout_id:
            fields.problems.append("id")
        return cls._read(fields, rollout_id), fields.problems

    @classmethod
    def _read(cls, fields: Fields, rollout_id: str | None) -> Record:
        """The record ``fields`` hold; its id is ``rollout_id`` when given (salvaged: the node's name)."""
        canary = fields.get("canary", CanaryPlan.from_json, None)
        waves = fields.get("waves", _wave_count, 1)
        step = fields.get("step", _step, {})
        if int(step.get("wave") or 1) > waves:
            fields.reject("step", f"wave {step['wave']} is past the last wave ({waves})")
            step = {}
        return cls(
            id=rollout_id if rollout_id is not None else fields.get("id", _text, None, required=True),
            kind=fields.get("kind", _choice(KINDS), CANARY if canary is not None else WAVES, required=True),
            state=fields.get("state", _choice(OPEN_STATES + FINISHED_STATES), STOPPED, required=True),
            created_ms=fields.get("created_ms", _ms, 0, required=True),
            updated_ms=fields.get("updated_ms", _ms, 0, required=True),
            identity=fields.get("identity", _text, ""),
            reason=fields.get("reason", _text, ""),
            options=fields.get("options", Options.from_json, Options()),
            waves=waves,
            entities=tuple(fields.get("entities", _list_of(_text), ())),
            entity_count=fields.get("entity_count", _count, 0),
            plan_chunks=fields.get("plan_chunks", _count, 0),
            undo_chunks=fields.get("undo_chunks", _count, 0),
            baseline_change=fields.get("baseline_change", _count, None),
            step=step,
            canary=canary,
            failure=fields.get("failure", _text, None),
            events=tuple(fields.get("events", _list_of(_event), ())),
        )


class Fields:
    """A document's fields read one at a time: strictly (the first wrong one makes it unreadable:
    InvalidInput) or salvaging (a wrong one takes its default and is named in :attr:`problems`)."""

    def __init__(self, document: Mapping[str, Any], *, strict: bool) -> None:
        self.document = document
        self.strict = strict
        self.problems: list[str] = []

    def get(self, name: str, read: Callable[[Any], Any], default: Any, *, required: bool = False) -> Any:
        value = self.document.get(name)
        if value is None and not required:
            return default
        try:
            if value is None:
                raise KeyError("missing")
            return read(value)
        except (KeyError, TypeError, ValueError, InvalidInput) as exc:
            self.reject(name, exc.message if isinstance(exc, InvalidInput) else str(exc))
            return default

    def reject(self, name: str, why: str) -> None:
        """Field ``name`` is wrong: InvalidInput when strict, else it is named in :attr:`problems`."""
        if self.strict:
            raise InvalidInput(f"rollout record is malformed: {name}: {one_line(why, 120)}")
        self.problems.append(name)


# What each field of a record may hold: exactly what its writer gives it, within sane bounds.


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{type(value).__name__}, not an object")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{type(value).__name__}, not a string")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{type(value).__name__}, not true or false")
    return value


def _integer(value: Any, low: int, high: int) -> int:
    if not is_json_int(value):
        raise TypeError(f"{type(value).__name__}, not an integer")
    if not low <= value <= high:
        raise ValueError(f"{value} is not within {low}..{high}")
    return value


def _count(value: Any) -> int:
    return _integer(value, 0, 2**63 - 1)


def _version(value: Any) -> int:
    return _integer(value, -1, 2**31 - 1)


def _ms(value: Any) -> int:
    return _integer(value, MIN_MS, MAX_MS)


def _wave_count(value: Any) -> int:
    return _integer(value, 1, MAX_WAVES)


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{type(value).__name__}, not a number of seconds")
    if not math.isfinite(value) or not 0 <= value <= MAX_DURATION_SECONDS:
        raise ValueError(f"{value} is not within 0..{MAX_DURATION_SECONDS:g} s")
    return float(value)


def _choice(choices: Sequence[str]) -> Callable[[Any], str]:
    def read(value: Any) -> str:
        if _text(value) not in choices:
            raise ValueError(f"{one_line(repr(value), 40)} is not one of {', '.join(choices)}")
        return value

    return read


def _list_of(read: Callable[[Any], Any]) -> Callable[[Any], list[Any]]:
    def read_all(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise TypeError(f"{type(value).__name__}, not a list")
        return [read(item) for item in value]

    return read_all


def _config(value: Any) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in _mapping(value).items()}


def _step(value: Any) -> dict[str, Any]:
    step = dict(_mapping(value))
    if "wave" in step:
        _wave_count(step["wave"])
    for key in ("step", "activity"):
        if key in step:
            _text(step[key])
    return step


def _event(value: Any) -> dict[str, Any]:
    event = dict(_mapping(value))
    _ms(event.get("at_ms"))
    _text(event.get("text"))
    return event


def plan_chunk_json(entries: Iterable[Planned]) -> bytes:
    return RolloutZNode.encode({"entries": [p.to_json() for p in entries]})


def decode_plan_chunk(data: bytes) -> list[Planned]:
    try:
        return [Planned.from_json(p) for p in RolloutZNode.decode(data)["entries"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"rollout plan chunk is malformed: {type(exc).__name__}") from None


def decode_undo_chunk(index: int, data: bytes) -> UndoChunk:
    try:
        return UndoChunk.from_json(index, RolloutZNode.decode(data))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"rollout undo chunk is malformed: {type(exc).__name__}") from None


def check_plan(record: Record, planned: Sequence[Planned]) -> None:
    """InvalidInput unless the plan and the record agree on the waves (1..``waves``, each with a
    write): a runner indexes one by the other (the step is within them: :meth:`Record.decode`).

    A plan still being recorded (``preparing``) or removed (a finished rollout) is not checked.
    """
    if not planned or record.state == PREPARING:
        return
    numbers = sorted({p.wave for p in planned})
    if numbers != list(range(1, record.waves + 1)):
        raise InvalidInput(
            f"rollout plan has waves {one_line(numbers, 60)}, but its record says {record.waves}"
        )


def waves_of(planned: Sequence[Planned]) -> list[list[Planned]]:
    """Planned writes grouped by wave, in wave order (each in the plan's order)."""
    by_wave: dict[int, list[Planned]] = {}
    for item in planned:
        by_wave.setdefault(item.wave, []).append(item)
    return [by_wave[w] for w in sorted(by_wave)]


# -- a rollout as a store holds it, and what stops one moving on -------------------------------------


class TakenOver(Exception):
    """The record changed under this process (``rollout abort`` or ``resume`` elsewhere): stop now."""

    def __init__(self, current: Record | None) -> None:
        state = current.state if current is not None else "removed"
        super().__init__(f"the rollout's record was changed by someone else (now {state})")
        self.current = current


class EntitiesMoved(Exception):
    """An entity the rollout was about to write (or restore) is not where it expected: nothing written."""

    def __init__(self, entities: Sequence[Entity], detail: str = "") -> None:
        names = ", ".join(e.label for e in entities[:5]) + (
            f" and {len(entities) - 5} more" if len(entities) > 5 else ""
        )
        super().__init__(
            detail or (f"{names} changed since the rollout read it" if entities else "a node moved")
        )
        self.entities = list(entities)

    @classmethod
    def since_written(cls, entities: Sequence[Entity]) -> EntitiesMoved:
        """Entities someone changed after the rollout wrote them: restoring would overwrite that."""
        names = ", ".join(e.label for e in entities[:5])
        them = "it" if len(entities) == 1 else "them"
        return cls(
            entities, f"{names} changed since the rollout wrote {them}: restoring would overwrite that change"
        )


@dataclass
class Loaded:
    """Everything recorded about one rollout."""

    record: Record
    version: int
    planned: list[Planned]
    undo: list[UndoChunk]
    owner: dict[str, Any] | None
    children: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What could not be read (salvaged: :meth:`Record.salvage`); empty for a record read whole."""
    claimed: list[str] = field(default_factory=list)
    """Entity paths whose claims name this rollout, found when its record could not say them all."""
    unreadable: list[str] = field(default_factory=list)
    """Undo chunks with nothing readable in them: removed when the rollout ends."""
    lost: list[str] = field(default_factory=list)
    """What of the undo could not be read (an entity path, or a chunk): what cannot be restored."""


@dataclass(frozen=True)
class Listed:
    """One rollout as ``rollout list`` shows it (``problem`` when its record cannot be read)."""

    id: str
    record: Record | None
    owner: dict[str, Any] | None
    problem: str | None = None
