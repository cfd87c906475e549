"""The metadata records configctl reads from a KRaft metadata log, decoded from their bytes.

Each record's value is an ``ApiMessageAndVersion`` (Kafka's ``AbstractApiMessageSerde``): a
frame version (1), the record's api key and version, as unsigned varints, then the message in
its flexible-version encoding (compact strings and bytes, compact arrays, tagged fields at the
end of each struct). The schemas are Kafka's own
(``metadata/src/main/resources/common/metadata/*.json``, the same in 4.4.0's
``kafka-metadata`` jar): ``ConfigRecord`` (4), ``UserScramCredentialRecord`` (11),
``FeatureLevelRecord`` (12), ``ClientQuotaRecord`` (14), ``ZkMigrationStateRecord`` (21),
``RemoveUserScramCredentialRecord`` (22), each at version 0. Anything else, or a version these schemas do not describe, is an
:class:`OtherRecord` with its api key: never an error, never guessed at.

KRaft keeps secrets in clear in its log; nothing decoded here does. A password config's value
and a SCRAM credential (salt, stored and server keys) become a :func:`configctl.digests.digest`
(``sha256:<hex>``, HMAC-SHA256 under the fleet's digest key when given one) at decode time, so a
change stays visible and the secret is never held.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from configctl import catalogue
from configctl.digests import digest
from configctl.entities import EntityType
from configctl.kafkacodes import RESOURCE_TYPES, SCRAM_TYPES
from configctl.kraft.recordbatch import read_unsigned_varint
from configctl.secrets import ScramCredential

FRAME_VERSION = 1
CONFIG_RECORD, USER_SCRAM_CREDENTIAL_RECORD, FEATURE_LEVEL_RECORD = 4, 11, 12
CLIENT_QUOTA_RECORD, REMOVE_USER_SCRAM_CREDENTIAL_RECORD = 14, 22
TOPIC_RECORD, REMOVE_TOPIC_RECORD = 2, 9
ZK_MIGRATION_STATE_RECORD = 21
PRE_MIGRATION = 2
"""``ZkMigrationState.PRE_MIGRATION``: the controllers wait for the brokers and copy ZooKeeper's
metadata into the log; the copy ends with the state ``MIGRATION`` (1), in the same metadata
transaction (seen on a real 3.9.2 migration: ``tests/migration``)."""


@dataclass(frozen=True)
class ConfigRecord:
    """A config set (``value``) or removed (``value`` None) for one resource; a secret's value
    is its digest (``secret`` True)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None
    secret: bool = False

    @property
    def family(self) -> EntityType | None:
        """configctl's entity type for the resource type (None: one Kafka added since)."""
        return RESOURCE_TYPES.get(self.resource_type)


@dataclass(frozen=True)
class ClientQuotaRecord:
    """A quota set or removed for one entity: its parts (``user``, ``client-id``, ``ip``) each
    with a name, None for a default."""

    entity: tuple[tuple[str, str | None], ...]
    key: str
    value: float
    remove: bool


@dataclass(frozen=True)
class UserScramCredentialRecord:
    """A SCRAM credential set: who, which mechanism, how many iterations, and a digest of the
    credential (salt, stored key, server key), never the credential itself."""

    name: str
    mechanism: str
    iterations: int
    credential_digest: str


@dataclass(frozen=True)
class RemoveUserScramCredentialRecord:
    name: str
    mechanism: str


@dataclass(frozen=True)
class FeatureLevelRecord:
    """A feature's finalized level (``metadata.version`` among them: what the log's records mean)."""

    name: str
    level: int


@dataclass(frozen=True)
class TopicRecord:
    """A topic made: its name and id (a topic's configs are named by its name, its removal by its id)."""

    name: str
    topic_id: str


@dataclass(frozen=True)
class RemoveTopicRecord:
    """A topic deleted, by id: Kafka writes no ConfigRecord for the configs that go with it."""

    topic_id: str


@dataclass(frozen=True)
class ZkMigrationStateRecord:
    """Where a ZooKeeper-to-KRaft migration is (``ZkMigrationState``: 0 none, 1 migration (the copy
    is done: dual-write), 2 pre-migration (copying), 3 post-migration (finalized))."""

    state: int


@dataclass(frozen=True)
class OtherRecord:
    """A record configctl does not decode (a topic, a partition, a broker's registration ...)."""

    api_key: int
    version: int


MetadataRecord = (
    ConfigRecord
    | ClientQuotaRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
    | FeatureLevelRecord
    | TopicRecord
    | RemoveTopicRecord
    | ZkMigrationStateRecord
    | OtherRecord
)


class _Reader:
    """The flexible-version encoding's fields, read in order from one message's bytes."""

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def _take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise ValueError("a field runs past the end of the record")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def unsigned_varint(self) -> int:
        value, self.pos = read_unsigned_varint(self.data, self.pos)
        return value

    def fixed(self, fmt: str) -> int | float | bool:
        layout = struct.Struct(">" + fmt)
        value: int | float | bool = layout.unpack(self._take(layout.size))[0]
        return value

    def compact_bytes(self) -> bytes | None:
        """Length plus one as an unsigned varint (0: null), then the bytes."""
        length = self.unsigned_varint() - 1
        return None if length < 0 else self._take(length)

    def compact_string(self) -> str | None:
        raw = self.compact_bytes()
        return None if raw is None else raw.decode("utf-8")

    def string(self) -> str:
        text = self.compact_string()
        if text is None:
            raise ValueError("a non-nullable string is null")
        return text

    def uuid(self) -> str:
        """A UUID's 16 bytes, as hex (only compared, never shown)."""
        return self._take(16).hex()

    def compact_array_length(self) -> int:
        return self.unsigned_varint() - 1

    def tagged_fields(self) -> None:
        """The struct's tagged fields: none is one configctl reads, so each is skipped."""
        for _ in range(self.unsigned_varint()):
            self.unsigned_varint()  # tag
            self._take(self.unsigned_varint())


def secret_config(resource_type: int, name: str) -> bool:
    """Whether a config's value is a secret: the catalogue's rule for the resource's family, and
    the brokers' (password configs, their listener-prefixed forms) whatever the family, so a key
    of a family configctl does not know is masked rather than kept."""
    family = RESOURCE_TYPES.get(resource_type)
    if family is not None and family is not EntityType.BROKERS and catalogue.is_sensitive(family, name):
        return True
    return catalogue.is_sensitive(EntityType.BROKERS, name)


def _mechanism(number: int) -> str:
    return SCRAM_TYPES.get(number, f"unknown mechanism {number}")


def _config(reader: _Reader, digest_key: bytes | None) -> ConfigRecord:
    resource_type = int(reader.fixed("b"))
    resource_name, name, value = reader.string(), reader.string(), reader.compact_string()
    reader.tagged_fields()
    secret = secret_config(resource_type, name)
    if secret and value is not None:
        value = digest(value, digest_key)
    return ConfigRecord(resource_type, resource_name, name, value, secret)


def _quota(reader: _Reader) -> ClientQuotaRecord:
    parts = []
    for _ in range(reader.compact_array_length()):
        parts.append((reader.string(), reader.compact_string()))
        reader.tagged_fields()
    key, value, remove = reader.string(), float(reader.fixed("d")), bool(reader.fixed("?"))
    reader.tagged_fields()
    return ClientQuotaRecord(tuple(parts), key, value, remove)


def _scram(reader: _Reader, digest_key: bytes | None) -> UserScramCredentialRecord:
    name, mechanism = reader.string(), int(reader.fixed("b"))
    salt, stored_key, server_key = reader.compact_bytes(), reader.compact_bytes(), reader.compact_bytes()
    iterations = int(reader.fixed("i"))
    reader.tagged_fields()
    # Digested in ZooKeeper's text form of a credential, so equal credentials digest alike on both lines.
    credential = ScramCredential(salt or b"", stored_key or b"", server_key or b"", iterations)
    return UserScramCredentialRecord(
        name, _mechanism(mechanism), iterations, digest(credential.to_config_value(), digest_key)
    )


def _scram_removal(reader: _Reader) -> RemoveUserScramCredentialRecord:
    name, mechanism = reader.string(), int(reader.fixed("b"))
    reader.tagged_fields()
    return RemoveUserScramCredentialRecord(name, _mechanism(mechanism))


def _feature(reader: _Reader) -> FeatureLevelRecord:
    name, level = reader.string(), int(reader.fixed("h"))
    reader.tagged_fields()
    return FeatureLevelRecord(name, level)


def _topic(reader: _Reader) -> TopicRecord:
    name, topic_id = reader.string(), reader.uuid()
    reader.tagged_fields()
    return TopicRecord(name, topic_id)


def _topic_removal(reader: _Reader) -> RemoveTopicRecord:
    topic_id = reader.uuid()
    reader.tagged_fields()
    return RemoveTopicRecord(topic_id)


def _migration_state(reader: _Reader) -> ZkMigrationStateRecord:
    state = int(reader.fixed("b"))
    reader.tagged_fields()
    return ZkMigrationStateRecord(state)


def decode_metadata_record(value: bytes, digest_key: bytes | None = None) -> MetadataRecord:
    """One metadata record's value (an ``ApiMessageAndVersion``), decoded, its secrets digested.

    Raises :class:`ValueError` when the bytes are not a record of the schema they name (the
    caller names the file and offset)."""
    reader = _Reader(value)
    frame = reader.unsigned_varint()
    if frame != FRAME_VERSION:
        raise ValueError(f"metadata record frame version {frame}, expected {FRAME_VERSION}")
    api_key, version = reader.unsigned_varint(), reader.unsigned_varint()
    if version != 0:
        return OtherRecord(api_key, version)  # every schema here is at version 0 only
    record: MetadataRecord
    if api_key == CONFIG_RECORD:
        record = _config(reader, digest_key)
    elif api_key == CLIENT_QUOTA_RECORD:
        record = _quota(reader)
    elif api_key == USER_SCRAM_CREDENTIAL_RECORD:
        record = _scram(reader, digest_key)
    elif api_key == REMOVE_USER_SCRAM_CREDENTIAL_RECORD:
        record = _scram_removal(reader)
    elif api_key == FEATURE_LEVEL_RECORD:
        record = _feature(reader)
    elif api_key == TOPIC_RECORD:
        record = _topic(reader)
    elif api_key == REMOVE_TOPIC_RECORD:
        record = _topic_removal(reader)
    elif api_key == ZK_MIGRATION_STATE_RECORD:
        record = _migration_state(reader)
    else:
        return OtherRecord(api_key, version)
    if reader.pos != len(value):
        raise ValueError(f"{len(value) - reader.pos} bytes follow a decoded {type(record).__name__}")
    return record
