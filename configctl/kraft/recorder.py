"""The flight recorder beside a KRaft broker: every committed config write, read from the broker's own disk, kept in the cluster.

``configctl listener run`` beside a KRaft broker runs this. It needs no ZooKeeper and no hook in
the broker: it reads the broker's ``server.properties`` for where its metadata log lives
(``metadata.log.dir``, else the first of ``log.dirs``), follows that log read-only
(:mod:`configctl.kraft.metadatalog`), folds it into writes per entity
(:mod:`configctl.kraft.metadatafold`) and appends each to the recorder topic
(:mod:`configctl.kraft.recordertopic`), where ``history``, ``blame`` and ``--at`` read it.

- **Only what is committed.** A follower's newest records can still be truncated, so a write is
  recorded only once its batch is below the quorum's high watermark (DescribeQuorum, asked of
  the brokers each round).
- **Restarts lose and repeat nothing.** The recorder starts after the last offset any recorder
  of the cluster recorded (the topic says), rebuilding the configs as of there from the newest
  snapshot at or before it and the log after it; a write sent twice has the same key.
- **A gap is recorded as one.** Offsets Kafka deleted before any recorder read them become a gap
  record naming the entities whose config the snapshot after them shows changed; when the state
  before the gap is itself unknown (the recorder was away longer than the log is kept), the gap
  says so rather than naming every entity.
- **Its progress is published** (``recorder/<broker id>``): the offset recorded to, the high
  watermark, and the broker's own metadata offset as the quorum reports it, so a reader knows how
  far the record goes and whether this broker's metadata is behind; and what the broker runs,
  asked of it then (:func:`observe`): the values it runs for the cluster-wide ``<default>``
  keys (as a digest: every broker should run them alike) and each key it holds but refused to
  apply. ``status`` and the audit read it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from configctl.adminapi.client import KafkaAdmin
from configctl.adminapi.errors import translate_errors
from configctl.digests import digest
from configctl.errors import ConfigctlError, InvalidInput, one_line
from configctl.kraft import recordertopic
from configctl.kraft.metadatafold import MetadataChange, MetadataState
from configctl.kraft.metadatalog import Gap, MetadataEntry, read_log, read_snapshot, snapshots
from configctl.kraft.owntopics import OwnTopicClients
from configctl.kraft.recordertopic import GapRecord
from configctl.kraft.reports import quorum_report
from configctl.reported import default_layer_running, not_applied

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 30.0
"""A recorder that recorded nothing new still says it is alive this often."""


def is_kraft_node(properties: Mapping[str, str]) -> bool:
    """Whether a ``server.properties`` is a KRaft node's (it names its roles)."""
    return bool(properties.get("process.roles", "").strip())


def metadata_log_dir(properties: Mapping[str, str]) -> Path:
    """Where a KRaft node keeps its metadata log: ``metadata.log.dir``, else the first of
    ``log.dirs``, else ``log.dir`` (Kafka's own order)."""
    for key in ("metadata.log.dir", "log.dirs", "log.dir"):
        value = properties.get(key, "").strip()
        if value:
            return Path(value.split(",")[0].strip())
    return Path("/tmp/kafka-logs")  # Kafka's default log.dir


def node_id(properties: Mapping[str, str], broker_id: int) -> int:
    """The node id ``server.properties`` declares, which must be ``broker_id``."""
    declared = (properties.get("node.id") or properties.get("broker.id") or "").strip()
    if declared and declared != str(broker_id):
        raise InvalidInput(
            f"server.properties sets node.id={declared}, but the recorder runs as broker {broker_id}"
        )
    roles = {r.strip() for r in properties.get("process.roles", "").split(",")}
    if "broker" not in roles:
        raise InvalidInput(
            f"server.properties is a KRaft controller's (process.roles={properties.get('process.roles')}): "
            "run the recorder beside a broker"
        )
    return broker_id


def plaintext_bootstrap(properties: Mapping[str, str]) -> str | None:
    """The node's own PLAINTEXT listener as ``host:port`` (None: it has none, so the operator
    gives ``--bootstrap-server`` and ``--command-config``)."""
    controllers = {n.strip() for n in properties.get("controller.listener.names", "").split(",")}
    protocols = dict(
        part.split(":", 1)
        for part in properties.get("listener.security.protocol.map", "").split(",")
        if ":" in part
    )
    for key in ("advertised.listeners", "listeners"):
        for listener in properties.get(key, "").split(","):
            name, _, address = listener.strip().partition("://")
            if not address or name in controllers:
                continue
            if protocols.get(name, name) == "PLAINTEXT":
                host, _, port = address.rpartition(":")
                return f"{host or 'localhost'}:{port}"
    return None


def unanswered(problem: ConfigctlError) -> dict[str, Any]:
    """What :func:`observe` publishes for a broker that could not be asked, and why."""
    return {"answers": False, "reason": one_line(str(problem)), "default_digest": None, "not_applied": None}


def observe(admin: KafkaAdmin, broker_id: int) -> dict[str, Any]:
    """What broker ``broker_id`` runs, asked of it (DescribeConfigs with synonyms, sent to it):
    a digest of the values it runs for the ``<default>`` keys, and each key it holds but refused
    to apply; ``answers`` False (``reason`` why) when it does not answer."""
    try:
        reported = admin.describe_broker(broker_id)
    except ConfigctlError as problem:
        return unanswered(problem)
    running = default_layer_running(reported)
    return {
        "answers": True,
        "reason": None,
        "default_keys": len(running),
        "default_digest": digest(json.dumps(running, sort_keys=True)),
        "not_applied": [n.to_json() for n in not_applied(reported)],
        "asked_ms": int(time.time() * 1000),
    }


@dataclass
class Round:
    """One round's outcome: what was recorded, and how far."""

    changes: int
    gaps: int
    recorded_to: int
    high_watermark: int | None


class Recorder:
    """The recorder of broker ``broker_id``, reading ``log_dir`` and writing through ``bootstrap``."""

    def __init__(
        self,
        broker_id: int,
        log_dir: Path,
        bootstrap: str,
        command_config: Path | None = None,
        *,
        timeout: float = 30.0,
        digest_key: bytes | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.broker_id = broker_id
        self.log_dir = log_dir
        self.bootstrap = bootstrap
        self.command_config = command_config
        self.timeout = timeout
        self.digest_key = digest_key
        self.clock = clock
        self.state = MetadataState()
        self.position = 0
        self.state_known = True
        self.problems: list[str] = []
        self._clients: OwnTopicClients | None = None
        self._admin: Any = None
        self._producer: Any = None
        self._last_progress = 0.0
        self._reports: KafkaAdmin | None = None
        self.recorded_changes = 0

    # -- opening ---------------------------------------------------------------------------

    def open(self) -> Recorder:
        """Connect, make sure of the topic, and rebuild the configs as of where recording resumes."""
        self._clients = OwnTopicClients(self.bootstrap, self.command_config, self.timeout, producer=True)
        self._admin, self._producer, _ = self._clients.__enter__()
        try:
            brokers = len(self._admin.describe_cluster().get("brokers") or ())
            recordertopic.ensure_topic(self._admin, brokers, self.bootstrap)
            reader = OwnTopicClients(self.bootstrap, self.command_config, self.timeout, producer=False)
            with reader as (_, _, consumer):
                resume = recordertopic.resume_offset(consumer, self.bootstrap, self.timeout)
            self._rebuild(resume or 0)
        except BaseException:
            self.close()
            raise
        return self

    def _publish(self, records: list[tuple[bytes, bytes]]) -> None:
        """Send ``records`` and wait until the cluster has every one."""
        recordertopic.append(self._producer, records, self.bootstrap, self.timeout)

    def _observe(self) -> dict[str, Any]:
        """:func:`observe` of this recorder's broker (a client that cannot connect is an answer too)."""
        try:
            if self._reports is None:
                self._reports = KafkaAdmin(self.bootstrap, self.command_config, timeout=self.timeout)
        except ConfigctlError as problem:
            return unanswered(problem)
        return observe(self._reports, self.broker_id)

    def close(self) -> None:
        if self._reports is not None:
            self._reports.close()
            self._reports = None
        if self._clients is not None:
            self._clients.__exit__()
            self._clients = None

    def __enter__(self) -> Recorder:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rebuild(self, resume: int) -> None:
        """The configs as of offset ``resume``: the newest snapshot at or before it, then the log
        up to it, nothing recorded (it was, by this recorder or another)."""
        self.state = MetadataState()
        self.position, self.state_known = 0, True
        usable = [s for s in snapshots(self.log_dir) if s.end_offset <= resume]
        if usable:
            self.state.load(read_snapshot(usable[-1], digest_key=self.digest_key))
            self.position = usable[-1].end_offset
        for _ in self._walk(resume, emit=False):
            pass
        self.position = max(self.position, resume)

    # -- recording -------------------------------------------------------------------------

    def high_watermark(self) -> tuple[int | None, int | None]:
        """The quorum's high watermark, and this broker's metadata log end as the quorum sees it."""
        with translate_errors("describe the controller quorum", self.bootstrap):
            quorum = quorum_report(self._admin.describe_metadata_quorum())
        own = next(
            (
                r["log_end_offset"]
                for r in quorum["voters"] + quorum["observers"]
                if r["node_id"] == self.broker_id
            ),
            None,
        )
        return quorum["high_watermark"], own

    def step(self) -> Round:
        """Record every committed write not recorded yet; publish progress.

        A round whose records were not all written (the cluster stopped answering while they were
        sent) is folded again from where the last one ended: the position moves only with what
        the cluster took, so a failed round loses nothing (and what it did send, it sends again
        under the same keys)."""
        start = self.position
        try:
            return self._round()
        except BaseException:
            self._rebuild(start)
            raise

    def _round(self) -> Round:
        high, own = self.high_watermark()
        records: list[tuple[bytes, bytes]] = []
        changes = gaps = 0
        if high is not None:
            now = int(self.clock() * 1000)
            for item in self._walk(high, emit=True):
                if isinstance(item, GapRecord):
                    records.append((recordertopic.gap_key(item.start), recordertopic.encode_gap(item)))
                    gaps += 1
                else:
                    encoded = recordertopic.encode_change(item, self.broker_id, now)
                    records.append((recordertopic.change_key(item.offset), encoded))
                    changes += 1
        due = self.clock() - self._last_progress >= PROGRESS_EVERY_S
        if records or due:
            progress = recordertopic.encode_progress(
                self.broker_id,
                self.position,
                high,
                int(self.clock() * 1000),
                self.problems,
                own,
                self._observe(),
            )
            records.append((recordertopic.recorder_key(self.broker_id), progress))
            self._publish(records)
            self._last_progress = self.clock()
        self.recorded_changes += changes
        return Round(changes, gaps, self.position, high)

    def _walk(self, stop: int, *, emit: bool) -> Iterator[MetadataChange | GapRecord]:
        """Fold the log from :attr:`position` up to ``stop`` (exclusive; whole batches only), and
        yield its writes and gaps when ``emit``."""
        pending: list[MetadataEntry] = []
        skip_below = self.position
        for item in read_log(self.log_dir, self.position, digest_key=self.digest_key):
            if isinstance(item, Gap):
                yield from self._batch(pending, emit)
                pending = []
                if item.start >= stop:
                    break  # the next round's (or, rebuilding, the part to be recorded)
                if not emit and item.end > stop:
                    # rebuilding, and the log no longer reaches where recording resumes: the
                    # configs there are unknown, and the gap from there is recorded as such
                    self.state_known = False
                    break
                gap = self._gap(item, emit)
                skip_below = gap.end
                self.position = max(self.position, gap.end)
                if emit:
                    yield gap
                continue
            if item.offset < skip_below:
                continue
            if pending and item.batch != pending[0].batch:
                yield from self._batch(pending, emit)
                pending = []
            if item.offset >= stop:
                pending = []  # not committed yet (or past where a rebuild stops): the next round's
                break
            pending.append(item)
        else:
            yield from self._batch(pending, emit)

    def _batch(self, entries: list[MetadataEntry], emit: bool) -> Iterator[MetadataChange]:
        if not entries:
            return
        changes = self.state.apply_batch(entries)
        self.position = entries[-1].offset + 1
        if emit:
            yield from changes

    def _gap(self, gap: Gap, emit: bool) -> GapRecord:
        """The configs past a gap from the snapshot that covers it; what the gap hid."""
        now = int(self.clock() * 1000)
        covering = [s for s in snapshots(self.log_dir) if s.end_offset >= gap.end]
        if not covering:
            self.problems.append(f"offsets {gap.start} to {gap.end - 1} are gone and no snapshot covers them")
            log.warning(
                "metadata offsets %d to %d are gone and no snapshot covers them", gap.start, gap.end - 1
            )
            self.state_known = False
            return GapRecord(gap.start, gap.end, (), self.broker_id, now, entities_known=False)
        snapshot = covering[0]
        changed = self.state.load(read_snapshot(snapshot, digest_key=self.digest_key))
        known, self.state_known = self.state_known, True
        if not emit:  # rebuilding: the gap was recorded when it was met, or lies before what is recorded
            return GapRecord(gap.start, snapshot.end_offset)
        log.warning(
            "metadata offsets %d to %d were deleted by Kafka before they were recorded: recorded as a gap",
            gap.start,
            snapshot.end_offset - 1,
        )
        return GapRecord(
            gap.start,
            snapshot.end_offset,
            tuple(changed) if known else (),
            self.broker_id,
            now,
            entities_known=known,
        )

    # -- running ---------------------------------------------------------------------------

    def run(self, stop: threading.Event, every: float = 0.5) -> None:
        """Record until ``stop`` is set; a round that fails is logged and retried (a broker
        restarting, a leader moving), never fatal."""
        while not stop.is_set():
            try:
                done = self.step()
                if done.changes or done.gaps:
                    log.info(
                        "recorded %d change(s), %d gap(s), up to metadata offset %d",
                        done.changes,
                        done.gaps,
                        done.recorded_to,
                    )
            except Exception as problem:  # the next round retries; the line says why
                log.warning("recording failed, retrying: %s", problem)
            stop.wait(every)
        self._last_progress = 0.0  # the last word on stopping: how far, and what the broker runs
        try:
            self.step()
        except Exception as problem:  # stopping anyway: the next start resumes from the topic
            log.warning("the last round failed: %s", problem)


__all__ = ["Recorder", "Round", "is_kraft_node", "metadata_log_dir", "node_id", "plaintext_bootstrap"]
