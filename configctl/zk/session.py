"""One ZooKeeper session: connecting, its ACL policy, and the generic reads every caller needs.

Reads of many nodes are the hot path of the CLI (plans, describes) and of the listener (full
loads, catch-up): :meth:`ZkSession.get_many` sends them as ZooKeeper multiReads (a thousand nodes
per request, all requests in flight at once) and falls back to pipelined single reads on servers
older than 3.6. Every kazoo exception is translated at this edge (:mod:`configctl.zk.errors`).
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    AuthFailedError,
    ConnectionClosedError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    SessionClosedRequireSaslError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.handlers.utils import selector_select
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import DataWatch

from configctl.errors import InvalidInput, NotFound, PermissionDenied, one_line
from configctl.zk import diagnose, multiread, retry
from configctl.zk.acls import AclPolicy
from configctl.zk.errors import LOST, translate_errors, translated
from configctl.zkconnection import ConnectionSettings

log = logging.getLogger(__name__)

PIPELINE_CHUNK = 5000
"""Single requests in flight at once when reading without multiRead."""

Node = tuple[bytes, ZnodeStat]


_POLL = types.SimpleNamespace(
    EVENT_READ=selectors.EVENT_READ, EVENT_WRITE=selectors.EVENT_WRITE, DefaultSelector=selectors.PollSelector
)


class PollingHandler(SequentialThreadingHandler):
    """kazoo's threading handler, waiting with one ``poll(2)`` where kazoo builds an epoll set.

    kazoo's connection thread waits on its socket before every read, about 23 times per change a
    listener applies, and kazoo's ``selector_select`` creates, fills and closes an epoll instance
    for each wait: about a quarter of a listener's CPU per change, which at fleet size is what the
    shared cores run out of. The same function with poll's selector has the same semantics (no
    limit on descriptor numbers, a hang-up reported as readable) and costs no descriptor. Measured:
    one listener 1.83-1.93 -> 1.49-1.66 ms of CPU per change; 100 listeners on two cores, p99 to
    all 896-2,377 -> 778-1,206 ms (benchmarks/RESULTS.md, "A fleet in a box").
    """

    def select(self, *args: Any, **kwargs: Any) -> Any:
        return selector_select(*args, selectors_module=_POLL, **kwargs)


class ZkSession:
    """A connection to ZooKeeper (owned, or an open kazoo client handed in) and its ACL policy."""

    def __init__(self, settings: ConnectionSettings | str, *, client: KazooClient | None = None) -> None:
        if isinstance(settings, str):
            settings = ConnectionSettings(settings)
        self.settings = settings
        self.acls = AclPolicy(settings)
        self._owns_client = client is None
        self._kazoo_log = diagnose.KazooLog()
        if client is None:
            client = KazooClient(
                **settings.kazoo_options(),
                handler=PollingHandler(),
                connection_retry=retry.connection_retry(),
                command_retry=retry.command_retry(settings.timeout),
                logger=self._kazoo_log.logger(),
            )
        self.client = client
        self._known_paths: set[str] = set()
        self._multi_read = True

    @property
    def connect(self) -> str:
        return self.settings.connect

    @property
    def timeout(self) -> float:
        return self.settings.timeout

    @property
    def session_id(self) -> int | None:
        client_id = self.client.client_id
        return client_id[0] if client_id else None

    # -- lifecycle ------------------------------------------------------------------------------

    def open(self) -> ZkSession:
        """Connect (once), then make sure the chroot exists: reads must not answer "nothing" for a
        cluster that is not there, any more than writes may create it.

        Every way a secured connection fails is one :mod:`configctl.errors` line (see
        :mod:`configctl.zk.diagnose`): the TLS files are checked before any socket is opened, a
        certificate the server's CA did not sign or a refused SASL login ends the wait at once.
        """
        if self.client.connected:
            return self
        self.settings.check_local()
        if self._owns_client:
            diagnose.watch_thread(self.client)
        try:
            self._start()
            self._probe()
        except BaseException:
            self._discard()
            raise
        return self

    def _start(self) -> None:
        """``KazooClient.start`` that gives up early when retrying cannot help, and says why."""
        try:
            live = self.client.start_async()
        except (ValueError, TypeError) as exc:
            raise InvalidInput(f"bad ZooKeeper connect string {self.connect!r}: {one_line(exc)}") from None
        deadline = time.monotonic() + self.timeout
        while not live.wait(0.05):
            if self._owns_client:
                failure = diagnose.early_failure(self._kazoo_log, self.client, self.settings)
                if failure is not None:
                    raise failure
            if time.monotonic() >= deadline:
                raise diagnose.timed_out(self._kazoo_log, self.settings)

    def _probe(self) -> None:
        """The first request: kazoo says CONNECTED before its SASL login, so only an answer shows the
        login worked (or that the server wants one); then the chroot must exist."""
        try:
            found = self.client.exists_async("/").get(timeout=self.timeout)
        except SessionClosedRequireSaslError as exc:
            raise diagnose.login_failure(exc, self.settings) from None
        except AuthFailedError as exc:
            raise diagnose.login_failure(exc, self.settings) from None
        except (KazooTimeoutError, *LOST, ConnectionClosedError) as exc:
            died = diagnose.thread_death(self.client) if self._owns_client else None
            if died is not None:
                raise diagnose.login_failure(died, self.settings) from None
            if self.settings.sasl is not None and isinstance(exc, KazooTimeoutError):
                raise diagnose.login_failure(
                    AuthFailedError("Connection dropped in SASL"), self.settings
                ) from None
            with translate_errors("check the chroot" if self.client.chroot else "reach ZooKeeper"):
                found = self._call(self.client.exists_async, "/")
        if self.client.chroot and found is None:
            raise NotFound(f"the chroot {self.client.chroot} of {self.connect} does not exist in ZooKeeper")

    def _discard(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop()
            self.client.close()

    def close(self) -> None:
        if self._owns_client:
            self._discard()

    def __enter__(self) -> ZkSession:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- single nodes ---------------------------------------------------------------------------

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One request through the command retry, each attempt bounded by the timeout.

        kazoo's synchronous calls wait for an answer with no limit, and its retry deadline is only
        checked between attempts: a server that is frozen (stopped, swapping, partitioned without
        a reset) would hold the command forever. The async call with a bounded ``get`` cannot.
        """
        return self.client.retry(lambda: method(*args, **kwargs).get(timeout=self.timeout))

    def watch_data(self, path: str, func: Callable[..., Any]) -> None:
        """A kazoo ``DataWatch`` on ``path`` that the caller does not wait for.

        ``DataWatch`` reads the node once before it returns, and that read has no time limit: the
        watch is started on a helper thread so a caller with a deadline keeps it. A watch whose
        first read fails simply never calls ``func``; the caller's deadline decides.
        """

        def start() -> None:
            with contextlib.suppress(Exception):
                DataWatch(self.client, path, func)

        threading.Thread(target=start, name=f"configctl-watch {path}", daemon=True).start()

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its parents (empty data), each with the ACL its place calls for."""
        if path in self._known_paths:
            return
        client = self.client
        with translate_errors(f"create {path}"):
            if self._call(client.exists_async, path) is None:
                parts = path.strip("/").split("/")
                for depth in range(1, len(parts) + 1):
                    prefix = "/" + "/".join(parts[:depth])
                    with contextlib.suppress(NodeExistsError):
                        self._call(client.create_async, prefix, b"", acl=self.acls.acl_for(prefix))
        self._known_paths.add(path)

    def forget_path(self, path: str) -> None:
        """Stop trusting that ``path`` exists (a transaction that would have created it failed)."""
        self._known_paths.discard(path)

    def knows_path(self, path: str) -> bool:
        return path in self._known_paths

    def remember_paths(self, paths: Iterable[str]) -> None:
        self._known_paths.update(paths)

    def exists(self, path: str) -> ZnodeStat | None:
        with translate_errors(f"stat {path}"):
            return self._call(self.client.exists_async, path)

    def get(self, path: str) -> Node | None:
        """``(data, stat)`` of a node, None when it does not exist."""
        with translate_errors(f"read {path}"):
            try:
                return self._call(self.client.get_async, path)
            except NoNodeError:
                return None

    def children(self, path: str) -> list[str]:
        """Sorted children of a node ([] when it does not exist)."""
        with translate_errors(f"list {path}"):
            try:
                return sorted(self._call(self.client.get_children_async, path))
            except NoNodeError:
                return []

    # -- many nodes -----------------------------------------------------------------------------

    def get_many(self, paths: Sequence[str], *, node_errors: bool = False) -> list[Any]:
        """``(data, stat)`` of each node (None when absent), in the order given, in few round trips.

        With ``node_errors`` a node that cannot be read (no permission, say) gives its
        :mod:`configctl.errors` exception in its place instead of failing the whole read: a
        listener reports that one entity and goes on with the rest.
        """
        result: list[Any] = []
        # multiRead: every request at once (a thousand nodes each); else 5,000 single gets at a time
        chunk = max(1, len(paths)) if self._multi_read else PIPELINE_CHUNK
        for answers in self.iter_many(paths, node_errors=node_errors, chunk=chunk):
            result.extend(answers)
        return result

    def iter_many(
        self, paths: Sequence[str], *, node_errors: bool = False, chunk: int = 5_000, stats: bool = True
    ) -> Iterator[list[Any]]:
        """:meth:`get_many` in chunks of ``chunk`` paths, yielded in order: a full load reads
        100,000 nodes this way and applies each chunk as it comes, so only one chunk of raw answers
        is held at once. Without ``stats`` each answer is ``(data, None)`` where multiRead is used:
        a full load has no use for 100,000 decoded stats.

        The next chunk is requested only when the caller is done with the current one. Asking
        for it earlier did not measure faster on two cores: kazoo decodes answers on its own
        thread, and two threads decoding and applying at once mostly take turns with the
        interpreter lock.
        """
        if not paths:
            return
        starts = iter(range(0, len(paths), chunk))
        in_flight: deque[tuple[int, Sequence[str], Any]] = deque()

        def send_next() -> bool:
            start = next(starts, None)
            if start is None:
                return False
            part = paths[start : start + chunk]
            in_flight.append((start, part, self._send(part, stats=stats)))
            return True

        send_next()
        while in_flight:
            start, part, sent = in_flight.popleft()
            try:
                answers = self._collect(part, sent, node_errors)
            except UnimplementedError:
                log.info("ZooKeeper at %s has no multiRead; reading with pipelined requests", self.connect)
                self._multi_read = False
                # This chunk and everything after it (in flight or not) again, with single reads.
                # The server drops the connection after an operation it does not know, so the
                # first of them waits for the reconnection (kazoo's command retry).
                rest, step = paths[start:], min(chunk, PIPELINE_CHUNK)
                for offset in range(0, len(rest), step):
                    yield self._reread(rest[offset : offset + step], node_errors)
                return
            yield answers
            send_next()

    def read_later(self, paths: Sequence[str]) -> PendingRead:
        """Send the reads of ``paths`` now and collect them later (:meth:`PendingRead.result`), so
        they share a round trip with whatever the caller sends next."""
        return PendingRead(self, paths, self._send(paths) if paths else None)

    def _send(self, paths: Sequence[str], *, stats: bool = True) -> Any:
        """Put the reads of ``paths`` in flight: multiRead requests, or (without) single gets."""
        if self._multi_read:
            return ("multi", multiread.send(self.client, paths, stats=stats))
        return ("single", [self.client.get_async(p) for p in paths])

    def _collect(self, paths: Sequence[str], sent: Any, node_errors: bool) -> list[Any]:
        kind, pending = sent
        if kind == "multi":
            return self._collect_multi(paths, pending, node_errors)
        return self._collect_single(paths, pending, node_errors)

    def _collect_multi(self, paths: Sequence[str], pending: Any, node_errors: bool) -> list[Any]:
        result: list[Any] = []
        for chunk, async_result in pending:
            try:
                answers = async_result.get(timeout=self.timeout)
            except UnimplementedError:
                raise  # no multiRead on this server: the caller falls back to single reads
            except Exception as exc:
                raise translated(exc, f"read {len(paths)} nodes") from None
            for path, answer in zip(chunk, answers, strict=True):
                if isinstance(answer, NoNodeError):
                    result.append(None)
                elif isinstance(answer, Exception):
                    if not node_errors:
                        with translate_errors(f"read {path}"):
                            raise answer
                    result.append(translated(answer, f"read {path}"))
                else:
                    result.append(answer)
        return result

    def _collect_single(self, paths: Sequence[str], pending: Any, node_errors: bool) -> list[Any]:
        result: list[Any] = []
        for path, async_result in zip(paths, pending, strict=True):
            with translate_errors(f"read {path}"):
                answer = outcome_of(async_result, self.timeout)
            result.append(self._node_answer(answer, f"read {path}", node_errors))
        return result

    @staticmethod
    def _node_answer(answer: Any, action: str, node_errors: bool) -> Any:
        """One node's :func:`outcome_of` answer as the many-node reads give it: the answer itself,
        None for a node that does not exist, and a node that may not be read as its error (with
        ``node_errors``) or raised; any other failure raised, as :func:`translate_errors` words it."""
        if not isinstance(answer, Exception):
            return answer
        if isinstance(answer, NoNodeError):
            return None
        error = translated(answer, action)
        if node_errors and isinstance(error, PermissionDenied):
            return error
        raise error

    def _reread(self, paths: Sequence[str], node_errors: bool) -> list[Any]:
        """Single pipelined reads of ``paths``, retried as a whole while the connection recovers."""

        def attempt() -> list[Any]:
            pending = [self.client.get_async(p) for p in paths]
            answers: list[Any] = []
            for path, async_result in zip(paths, pending, strict=True):
                answer = outcome_of(async_result, self.timeout)
                if isinstance(answer, NoNodeError):
                    answers.append(None)
                elif isinstance(answer, NoAuthError) and node_errors:
                    answers.append(translated(answer, f"read {path}"))
                elif isinstance(answer, Exception):
                    raise answer  # kazoo's own error: the retry below knows what to retry
                else:
                    answers.append(answer)
            return answers

        with translate_errors(f"read {len(paths)} nodes"):
            return self.client.retry(attempt)

    def _multi_get(self, paths: Sequence[str], node_errors: bool = False) -> list[Any]:
        """Every read as multiRead requests (raises UnimplementedError on servers without it)."""
        return self._collect_multi(paths, multiread.send(self.client, paths), node_errors)

    def _pipelined_get(self, paths: Sequence[str], node_errors: bool = False) -> list[Any]:
        """Every read as single pipelined requests, :data:`PIPELINE_CHUNK` in flight at once."""
        result: list[Any] = []
        for start in range(0, len(paths), PIPELINE_CHUNK):
            part = paths[start : start + PIPELINE_CHUNK]
            result.extend(self._collect_single(part, [self.client.get_async(p) for p in part], node_errors))
        return result

    def children_many(self, paths: Sequence[str], *, node_errors: bool = False) -> list[Any]:
        """The sorted children of many nodes, pipelined; None where a node does not exist.

        With ``node_errors`` a node that may not be listed gives its error in its place.
        """
        result: list[Any] = []
        for start in range(0, len(paths), PIPELINE_CHUNK):
            pending = [(p, self.client.get_children_async(p)) for p in paths[start : start + PIPELINE_CHUNK]]
            for path, async_result in pending:
                with translate_errors(f"list {path}"):
                    answer = outcome_of(async_result, self.timeout)
                children = self._node_answer(answer, f"list {path}", node_errors)
                result.append(sorted(children) if isinstance(children, list) else children)
        return result

    def delete_nodes(self, paths: Iterable[str]) -> int:
        """Delete nodes pipelined, ignoring ones already gone (another process may race us)."""
        pending = [(path, self.client.delete_async(path)) for path in paths]
        deleted = 0
        for path, async_result in pending:
            with translate_errors(f"delete {path}"):
                try:
                    async_result.get(timeout=self.timeout)
                    deleted += 1
                except NoNodeError:
                    continue
        return deleted

    def transaction(self) -> Any:
        return self.client.transaction()

    def set_together(self, writes: Sequence[tuple[str, bytes]]) -> bool:
        """Set the data of existing nodes in one transaction (one write through the quorum): True
        when every one was set, False when the transaction failed (a node missing, say) and none was."""
        transaction = self.client.transaction()
        for path, data in writes:
            transaction.set_data(path, data)
        with translate_errors(f"write {', '.join(path for path, _ in writes)}"):
            results = transaction.commit_async().get(timeout=self.timeout)
        return not any(isinstance(result, Exception) for result in results)


def outcome_of(async_result: Any, timeout: float) -> Any:
    """A request's answer, or the kazoo exception it failed with, returned instead of raised.

    ``AsyncResult.get`` raises the exception the result holds. Caught in a frame that still holds
    the result (a loop over requests in flight), the exception's traceback and that frame refer to
    each other, and the cycle keeps the frame and every caller's frame alive until the cyclic
    collector runs: after a full load that was its 100,000 entities, held through a missing
    ``/config/ips``. An exception handed back unraised has no traceback. No answer within
    ``timeout`` raises kazoo's timeout error, as ``get`` does.
    """
    async_result.wait(timeout)
    if async_result.ready() and not async_result.successful():
        return async_result.exception
    return async_result.get(block=False)


class PendingRead:
    """Reads in flight (:meth:`ZkSession.read_later`); :meth:`result` answers as ``get_many`` does."""

    def __init__(self, session: ZkSession, paths: Sequence[str], sent: Any) -> None:
        self.session, self.paths, self._sent = session, paths, sent

    def result(self, *, node_errors: bool = False) -> list[Any]:
        if self._sent is None:
            return []
        try:
            return self.session._collect(self.paths, self._sent, node_errors)
        except UnimplementedError:
            log.info(
                "ZooKeeper at %s has no multiRead; reading with pipelined requests", self.session.connect
            )
            self.session._multi_read = False
            return self.session._reread(self.paths, node_errors)
