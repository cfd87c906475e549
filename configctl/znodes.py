"""The bytes of every znode configctl reads or writes: one object per node kind, as Kafka's ``ZkData``.

Kafka's nodes (docs/reference/zookeeper-nodes.md), which a real Kafka broker must read and ``kafka-configs.sh`` writes:

* the entity config node ``/config/<type>/<name>``: ``{"version":1,"config":{"k":"v"}}``;
* the change notification ``/config/changes/config_change_NNNNNNNNNN``: ``{"version":2,"entity_path":"..."}``
  (brokers before KIP-55 wrote version 1 with ``entity_type``/``entity_name``, which we still read).

configctl's own nodes, under ``/configctl`` (never inside ``/config``): a history record per
write (:class:`HistoryZNodes`), a running listener's state (:class:`BrokerStateZNode`), a
broker's persistent fleet record (:class:`FleetRecordZNode`) and a rollout's record
(:class:`RolloutZNode`).

The Kafka encoders reproduce Jackson's compact output byte for byte (key order included) and the
decoders are strict: a node that does not look exactly like Kafka's is reported with a one-line
reason instead of being half-understood. Everything here is pure: no I/O.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from configctl.entities import Entity
from configctl.errors import InvalidInput
from configctl.timeref import in_calendar

CHANGES_PATH = "/config/changes"
NOTIFICATION_PREFIX = "config_change_"
NOTIFICATION_PATH_PREFIX = f"{CHANGES_PATH}/{NOTIFICATION_PREFIX}"
"""The path handed to ZooKeeper's sequential create; the server appends the 10-digit number."""

ENTITY_CONFIG_VERSION = 1
NOTIFICATION_VERSION = 2

# Kafka (ZkConfigManager) only accepts these two types in a version-1 notification.
_V1_ENTITY_TYPES = ("topics", "clients")
_CHANGE_NAME_RE = re.compile(r"config_change_([0-9]+)")
_MAX_SEQUENCE = 2**31 - 1  # ZooKeeper's sequence counter is a signed 32-bit int
_JSON_ESCAPE_RE = re.compile(r"\\(?:u[0-9a-f]{4}|.)")
_NEEDS_ESCAPE_RE = re.compile(r'[\x00-\x1f"\\]')
"""What ``json.dumps(ensure_ascii=False)`` escapes: the quote, the backslash, control characters."""


# -- JSON text, as Jackson writes it --------------------------------------------------------------


def _json_string(text: str) -> str:
    """Quote ``text`` as Jackson's default ObjectMapper does.

    Python and Jackson agree on which characters to escape (quote, backslash, control characters;
    non-ASCII stays literal) but Python writes ``\\u001f`` where Jackson writes ``\\u001F``. Every
    backslash in ``json.dumps`` output starts an escape, so scanning escapes left to right is exact.
    """
    if not _NEEDS_ESCAPE_RE.search(text):
        return f'"{text}"'  # what json.dumps writes for it; nearly every name and value
    quoted = json.dumps(text, ensure_ascii=False)
    return _JSON_ESCAPE_RE.sub(lambda m: m.group(0)[:2] + m.group(0)[2:].upper(), quoted)


def _to_utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} contains characters that cannot be written as UTF-8") from None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidInput(f"duplicate JSON key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise InvalidInput(f"{name} is not valid JSON")


def _parse_json_object(data: bytes, what: str) -> dict[str, Any]:
    """Parse UTF-8 JSON that must be an object; every failure is a one-line :class:`InvalidInput`."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)
    except InvalidInput as exc:
        raise InvalidInput(f"{what} is not valid: {exc.message}") from None
    except RecursionError:
        raise InvalidInput(f"{what} is not valid JSON: nesting too deep") from None
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).splitlines()[0]
        raise InvalidInput(f"{what} is not valid JSON: {reason}") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} must be a JSON object, not {_json_kind(value)}")
    return value


def is_json_int(value: Any) -> bool:
    """A JSON integer as decoded: an ``int`` that is not a ``bool`` (Python's ``True`` is an int;
    JSON's ``true`` is no number)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _check_version(obj: Mapping[str, Any], what: str, allowed: tuple[int, ...]) -> int:
    version = obj.get("version")
    if not is_json_int(version) or version not in allowed:
        expected = " or ".join(str(v) for v in allowed)
        shown = "missing" if "version" not in obj else json.dumps(version)
        raise InvalidInput(f"{what} has version {shown}; expected {expected}")
    return version


# -- entity config nodes --------------------------------------------------------------------------


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """The bytes of ``/config/<type>/<name>``: ``{"version":1,"config":{...}}``, keys sorted.

    Kafka's writer does not sort, but any order reads back the same, and sorting makes the bytes
    (and therefore diffs, history and tests) deterministic.
    """
    items = []
    for key in sorted(config):
        value = config[key]
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInput(
                f"config {key!r} must map a string to a string (got {type(value).__name__}); "
                "Kafka stores every value as a string"
            )
        items.append(f"{_json_string(key)}:{_json_string(value)}")
    body = ",".join(items)
    text = f'{{"version":{ENTITY_CONFIG_VERSION},"config":{{{body}}}}}'
    return _to_utf8(text, "config")


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    """Read an entity config node strictly.

    No data (``None`` or ``b""``) is a node Kafka created without a config (a user node that only
    holds nested clients, for instance) and means "no overrides". Anything else must be exactly
    version 1 with a ``config`` object of strings.
    """
    if not data:
        return {}
    fast = _fast_config(data)
    if fast is not None:
        return fast
    what = "entity config node"
    obj = _parse_json_object(data, what)
    _check_version(obj, what, (ENTITY_CONFIG_VERSION,))
    if "config" not in obj:
        raise InvalidInput(f'{what} has no "config" object')
    config = obj["config"]
    if not isinstance(config, dict):
        raise InvalidInput(f'{what}: "config" must be an object, not {_json_kind(config)}')
    for key, value in config.items():
        if not isinstance(value, str):
            hint = (
                f" (write it as {json.dumps(json.dumps(value))})" if isinstance(value, (int, float)) else ""
            )
            raise InvalidInput(
                f"{what}: value of {key!r} is {_json_kind(value)}, but Kafka stores every value as a string{hint}"
            )
    return dict(config)


@functools.cache
def _node_decoder() -> tuple[Any, type[Exception]]:
    """msgspec's typed JSON decoder of an entity config node's only shape (``version`` an integer,
    ``config`` strings to strings, nothing else), and its error. Built on the first decode, not at
    import: ``configctl --help`` would pay msgspec's 6 ms import for nothing."""
    import msgspec

    class ConfigNode(msgspec.Struct, forbid_unknown_fields=True):
        version: int
        config: dict[str, str]

    return msgspec.json.Decoder(ConfigNode), msgspec.DecodeError


def _fast_config(data: bytes) -> dict[str, str] | None:
    """The config of a well-formed node without escapes or duplicate names, else None.

    A listener decodes 100,000 nodes at a full load, nearly all written by Kafka or configctl in
    one compact form. msgspec's typed decoder reads one in a seventh of the strict parser's time
    and refuses bad UTF-8, unknown fields and non-string values, but takes the last of duplicate
    names, which Kafka's reader refuses. Without a backslash every ``"`` delimits a string, and a
    node of this shape holds ``2 + 2 x len(config)`` strings exactly when no name repeats at
    either level: counting the quotes tells. Anything else goes the strict way, which words it.
    """
    if b"\\" in data:
        return None
    decoder, refused = _node_decoder()
    try:
        node = decoder.decode(data)
    except (refused, UnicodeDecodeError):
        return None
    config = node.config
    if node.version != ENTITY_CONFIG_VERSION or data.count(b'"') != 4 + 4 * len(config):
        return None
    return config


# -- change notifications -------------------------------------------------------------------------

_CANONICAL_NOTIFICATION_RE = re.compile(
    rb'\{"version":2,"entity_path":"([^"\\\x00-\x1f/]+/[^"\\\x00-\x1f]+)"\}'
)
"""``{"version":2,"entity_path":"<type>/<name>"}`` with a plain string, as Kafka and configctl write it."""


def encode_notification(entity: Entity) -> bytes:
    """The bytes of a change notification: ``{"version":2,"entity_path":"<type>/<name>"}``."""
    text = f'{{"version":{NOTIFICATION_VERSION},"entity_path":{_json_string(entity.path)}}}'
    return _to_utf8(text, "entity path")


def decode_notification(data: bytes) -> Entity:
    """Which entity a notification is about; reads version 2 and the pre-KIP-55 version 1.

    In version 1, ``entity_name`` is the stored (sanitized) name, exactly the last segment of
    the path, so both versions are resolved through :meth:`Entity.from_path`.
    """
    what = "config change notification"
    if not data:
        raise InvalidInput(f"{what} is empty")
    fast = _CANONICAL_NOTIFICATION_RE.fullmatch(data)
    if fast is not None:  # Kafka's exact form: the entity is all there is to check
        try:
            return Entity.from_path(fast.group(1).decode("utf-8"))
        except (InvalidInput, UnicodeDecodeError):
            pass  # the strict way words the reason
    obj = _parse_json_object(data, what)
    version = _check_version(obj, what, (1, 2))
    if version == 2:
        path = obj.get("entity_path")
        if not isinstance(path, str) or not path:
            raise InvalidInput(f'{what} (version 2) needs a string "entity_path"')
        if "/" not in path:
            raise InvalidInput(f"{what}: entity path {path!r} has no entity name")
    else:
        entity_type = obj.get("entity_type")
        name = obj.get("entity_name")
        if entity_type not in _V1_ENTITY_TYPES:
            raise InvalidInput(
                f"{what} (version 1): entity_type must be one of {', '.join(_V1_ENTITY_TYPES)}, "
                f"not {json.dumps(entity_type)}"
            )
        if not isinstance(name, str) or not name:
            raise InvalidInput(f'{what} (version 1) needs a string "entity_name"')
        if "/" in name:
            raise InvalidInput(f"{what} (version 1): entity name {name!r} must not contain '/'")
        path = f"{entity_type}/{name}"
    try:
        return Entity.from_path(path)
    except InvalidInput as exc:
        raise InvalidInput(f"{what} names an invalid entity: {exc.message}") from None


def change_number(node_name: str) -> int:
    """The sequence number of a notification node: ``config_change_0000000042`` -> 42."""
    match = _CHANGE_NAME_RE.fullmatch(node_name)
    if not match:
        raise InvalidInput(
            f"{node_name!r} is not a config change notification (expected {NOTIFICATION_PREFIX}NNNNNNNNNN)"
        )
    return int(match.group(1))


def notification_name(number: int) -> str:
    """The node name ZooKeeper gives the ``number``-th notification (10 digits, zero padded)."""
    if not is_json_int(number) or not 0 <= number <= _MAX_SEQUENCE:
        raise InvalidInput(
            f"change number {number!r} is not a ZooKeeper sequence number (0..{_MAX_SEQUENCE})"
        )
    return f"{NOTIFICATION_PREFIX}{number:010d}"


# -- configctl's own nodes (under /configctl, never inside Kafka's /config) ------------------------

CONFIGCTL_ROOT = "/configctl"


@dataclass(frozen=True)
class HistoryRecord:
    """One recorded write of an entity: the config it left, what it changed, who and why.

    ``changed`` maps every key the write touched to the value it had before (None: the key was
    not set). Only the delta is kept, not the whole previous config, so a record is about the
    size of the config it records and a config near ZooKeeper's node limit stays changeable.
    ``config`` is None when the config was too large to record in the same transaction
    (``config_sha256`` then still identifies it).
    """

    entity_path: str
    version: int
    time_ms: int
    identity: str
    reason: str
    config: dict[str, str] | None
    changed: dict[str, str | None]
    config_sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``history --output json`` element (docs/reference/json-output.md; unmasked: callers mask)."""
        return {
            "version": self.version,
            "time_ms": self.time_ms,
            "identity": self.identity,
            "reason": self.reason,
            "config": self.config,
        }


class HistoryZNodes:
    """``/configctl/history/<entity path>``: an entity's recorded writes.

    The directory node's own data is the entity's first recorded write (it is created with that
    write); every later write is a child ``v<version>_<sequence>``. One node per write, without a
    separate (empty) directory node: a bulk apply of new entities writes three nodes per entity.
    """

    ROOT = f"{CONFIGCTL_ROOT}/history"
    PREFIX = "v"

    @classmethod
    def directory(cls, entity: Entity) -> str:
        return f"{cls.ROOT}/{entity.path}"

    @classmethod
    def sequential_path(cls, entity: Entity, version: int) -> str:
        """The path handed to a sequential create (ZooKeeper appends a sequence number)."""
        return f"{cls.directory(entity)}/{cls.PREFIX}{version:010d}_"

    @classmethod
    def is_record(cls, name: str) -> bool:
        return name.startswith(cls.PREFIX)

    @classmethod
    def order(cls, name: str) -> tuple[int, int]:
        """Oldest first: by the sequence ZooKeeper appended, then the version."""
        body = name[len(cls.PREFIX) :]
        version, _, sequence = body.partition("_")
        try:
            return int(sequence or 0), int(version or 0)
        except ValueError:
            return (0, 0)

    @staticmethod
    def encode(record: HistoryRecord) -> bytes:
        document: dict[str, Any] = {
            "entity_path": record.entity_path,
            "version": record.version,
            "time_ms": record.time_ms,
            "identity": record.identity,
            "reason": record.reason,
            "config": record.config,
            "changed": record.changed,
        }
        if record.config_sha256 is not None:
            document["config_sha256"] = record.config_sha256
        return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    @staticmethod
    def decode(data: bytes) -> HistoryRecord:
        """Read a record; records written before ``changed`` existed carry ``previous`` instead."""
        obj = _parse_json_object(data, "history record")
        try:
            config = obj.get("config")
            if config is not None:
                config = {str(k): str(v) for k, v in dict(config).items()}
            if "changed" in obj:
                changed = {str(k): None if v is None else str(v) for k, v in dict(obj["changed"]).items()}
            else:
                previous = {str(k): str(v) for k, v in dict(obj.get("previous") or {}).items()}
                after = config or {}
                changed = {
                    k: previous.get(k)
                    for k in sorted(set(previous) | set(after))
                    if previous.get(k) != after.get(k)
                }
            time_ms = obj.get("time_ms")
            if not in_calendar(time_ms):  # a forged time would break every reader that prints it
                shown = json.dumps(time_ms)[:40]
                raise InvalidInput(f"history record is malformed: time_ms {shown} is not a moment")
            return HistoryRecord(
                entity_path=str(obj.get("entity_path", "")),
                version=int(obj["version"]),
                time_ms=time_ms,
                identity=str(obj.get("identity", "")),
                reason=str(obj.get("reason", "")),
                config=config,
                changed=changed,
                config_sha256=obj.get("config_sha256"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"history record is malformed: {type(exc).__name__}") from None


class BrokerStateZNode:
    """``/configctl/brokers/<id>``: a running listener's state (docs/reference/state-and-fleet-nodes.md), ephemeral."""

    ROOT = f"{CONFIGCTL_ROOT}/brokers"
    SIDECAR, CONFIG_MANAGER = "sidecar", "config-manager"
    """``kind``: beside a Kafka broker registered with its id, or that broker's own config manager."""
    MAX_BYTES = 900_000
    """ZooKeeper refuses nodes over ~1 MiB; the problem lists are trimmed to stay below this."""
    TRIMMABLE = ("problems", "poison", "rejected", "ignored")

    @classmethod
    def path(cls, broker_id: int | str) -> str:
        return f"{cls.ROOT}/{broker_id}"

    @classmethod
    def encode(cls, document: Mapping[str, Any]) -> bytes:
        """Compact JSON; the longest problem list loses its oldest half until the node fits."""
        doc = dict(document)
        data = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
        while len(data) > cls.MAX_BYTES:
            longest = max(cls.TRIMMABLE, key=lambda k: len(doc.get(k) or []))
            items = list(doc.get(longest) or [])
            if not items:
                break
            doc[longest] = items[len(items) // 2 :]
            if longest == "problems":  # a cut list says so
                doc["problems_omitted"] = int(doc.get("problems_omitted") or 0) + len(items) // 2
            data = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
        return data

    @staticmethod
    def decode(data: bytes) -> dict[str, Any]:
        return _parse_json_object(data, "broker state node")

    @classmethod
    def decode_live(cls, data: bytes) -> dict[str, Any]:
        """A live listener's state, or, when its bytes cannot be decoded, a state with no applied
        change and one ``unreadable`` problem: the broker is live but unknown, never "absent"."""
        try:
            return cls.decode(data)
        except InvalidInput as exc:
            reason = str(exc).splitlines()[0] if str(exc) else "not a JSON object"
            return {
                "last_applied_change": None,
                "problems": [
                    {
                        "kind": "unreadable",
                        "entity_path": None,
                        "change_number": None,
                        "reason": f"its state node cannot be read: {reason}",
                    }
                ],
            }


class ClusterIdZNode:
    """``/cluster/id``: the Kafka cluster's id, written once by the first broker (Kafka's
    ``ClusterIdZNode``, ``{"version":"1","id":"<22 characters>"}``): what says two addresses are
    one cluster."""

    PATH = "/cluster/id"

    @staticmethod
    def decode(data: bytes) -> str:
        document = _parse_json_object(data, "Kafka's cluster id (/cluster/id)")
        cluster_id = document.get("id")
        if not isinstance(cluster_id, str) or not cluster_id:
            raise InvalidInput("Kafka's cluster id (/cluster/id) holds no id")
        return cluster_id


class KafkaBrokerZNode:
    """``/brokers/ids/<id>``: a running Kafka broker's registration (ephemeral, Kafka's
    ``BrokerIdZNode``): its endpoints (``LISTENER://host:port``) and each listener's security
    protocol, i.e. where a listener beside it asks the broker what it runs."""

    ROOT = "/brokers/ids"

    @classmethod
    def path(cls, broker_id: int | str) -> str:
        return f"{cls.ROOT}/{broker_id}"

    @staticmethod
    def endpoints(data: bytes) -> list[tuple[str, str]]:
        """``(security protocol, host:port)`` of each endpoint, in the registration's order."""
        document = _parse_json_object(data, "Kafka's broker registration (/brokers/ids)")
        protocols = document.get("listener_security_protocol_map")
        protocols = protocols if isinstance(protocols, dict) else {}
        found = []
        for endpoint in document.get("endpoints") or []:
            name, sep, address = str(endpoint).partition("://")
            if sep and address:
                found.append((str(protocols.get(name, name)).upper(), address))
        return found


class FleetRecordZNode:
    """``/configctl/fleet/<id>``: a broker's persistent record (docs/reference/state-and-fleet-nodes.md), so a broker whose
    listener died is still known: ``{"broker_id","host","last_seen_ms","last_applied_change","kind"}``."""

    ROOT = f"{CONFIGCTL_ROOT}/fleet"

    @classmethod
    def path(cls, broker_id: int | str) -> str:
        return f"{cls.ROOT}/{broker_id}"

    @staticmethod
    def encode(
        broker_id: int,
        host: str,
        last_seen_ms: int,
        last_applied_change: int | None,
        kind: str = "config-manager",
    ) -> bytes:
        document = {
            "broker_id": int(broker_id),
            "host": host,
            "last_seen_ms": int(last_seen_ms),
            "last_applied_change": last_applied_change,
            "kind": kind,
        }
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()

    @staticmethod
    def decode(data: bytes) -> dict[str, Any]:
        return _parse_json_object(data, "fleet record")


class RolloutZNode:
    """``/configctl/rollouts/<id>``: a canary or wave rollout's record (docs/reference/rollout-records.md), persistent.

    While a rollout is open its record says what it plans and how far it got; children hold the
    rest, each written in the same multi as what it describes: ``plan-NNNN`` (the writes it
    plans, in chunks), ``undo-NNNN`` (the exact previous bytes of the entities one multi wrote,
    created by that multi) and ``owner`` (ephemeral: a process is running it right now). Every
    entity an open rollout touches is claimed under :attr:`CLAIMS` (one node per entity path),
    which is how a second rollout touching it is refused, atomically.
    """

    ROOT = f"{CONFIGCTL_ROOT}/rollouts"
    CLAIMS = f"{CONFIGCTL_ROOT}/rollout-claims"
    OWNER = "owner"
    PLAN_PREFIX = "plan-"
    UNDO_PREFIX = "undo-"

    @classmethod
    def path(cls, rollout_id: str) -> str:
        return f"{cls.ROOT}/{rollout_id}"

    @classmethod
    def owner(cls, rollout_id: str) -> str:
        return f"{cls.ROOT}/{rollout_id}/{cls.OWNER}"

    @classmethod
    def plan(cls, rollout_id: str, index: int) -> str:
        return f"{cls.ROOT}/{rollout_id}/{cls.PLAN_PREFIX}{index:04d}"

    @classmethod
    def undo(cls, rollout_id: str, index: int) -> str:
        return f"{cls.ROOT}/{rollout_id}/{cls.UNDO_PREFIX}{index:06d}"

    @classmethod
    def claim(cls, entity_path: str) -> str:
        """One flat node name per entity path (``users/a%20b/clients/c`` -> ``users%2Fa%2520b%2Fclients%2Fc``)."""
        return f"{cls.CLAIMS}/{quote(entity_path, safe='')}"

    @classmethod
    def claimed_path(cls, node_name: str) -> str:
        return unquote(node_name)

    @staticmethod
    def encode(document: Mapping[str, Any]) -> bytes:
        return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    @staticmethod
    def decode(data: bytes) -> dict[str, Any]:
        return _parse_json_object(data, "rollout node")
