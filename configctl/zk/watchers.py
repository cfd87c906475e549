"""Watches that only *tell*: a session's state, and the child watch on a notification directory.

In the spirit of kazoo's ``recipe/watchers.py`` (``ChildrenWatch``, ``DataWatch``), with one
difference a listener needs: kazoo's recipes read on kazoo's event thread, and a read there
blocks every other callback of the session. These callbacks only tell the caller that something
happened (they must return at once); the caller's own worker thread does every read, re-arming
the watch as it lists.

* :class:`SessionWatch`: the session's state (connected, with which session id; suspended; lost).
* :class:`NotificationWatch`: a directory of sequential notification nodes (Kafka's
  ``/config/changes``): its children listed, their sequence numbers, and in the listing's round
  trip the new notifications read, with the config nodes a persistent tree watch saw change.
  The one rule of those reads: every one is taken after every notification a check hands over
  (:meth:`PendingCheck.result`), so a handler may take them as the reads its changes call for.

kazoo forgets its watches when a connection drops, even when the session survives: after every
reconnection (:class:`SessionWatch` says when) the caller lists again with the watch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from configctl.errors import ZooKeeperUnavailable
from configctl.zk import retry, treewatch
from configctl.zk.errors import translate_errors
from configctl.zk.session import PendingRead, ZkSession

MAX_HINTS = 10_000
"""What the tree watch's hints hold at most between two checks: past it, more are dropped (they
are only hints: the listing and the handler's own reads stay the truth)."""
MAX_SEQUENCE = 2**31 - 1
"""The largest number ZooKeeper gives a sequential node (a signed 32-bit counter)."""


class Notified(NamedTuple):
    """A notification as read: its bytes, when it was made, and the transaction that made it."""

    data: bytes
    ctime_ms: int
    zxid: int
    """Its ``czxid``: a config node last written at or before it was written no later than it."""


Read = Notified | Exception | None
"""A notification as read (:class:`Notified`); the error that kept it from being read; or None
when it does not exist (never created, or already purged)."""


class CheckResult(NamedTuple):
    """What one check (:meth:`NotificationWatch.check`) found."""

    names: set[str]
    """The notifications there are, every one of them made before any read below was taken."""
    notifications: dict[str, Read]
    """Notifications read ahead, by name."""
    changed: dict[str, Any]
    """Config nodes the tree watch saw change, read (by path, as :meth:`ZkSession.get_many`
    answers with ``node_errors``) after every one of ``names`` was made."""
    again: bool
    """More may be there than ``names`` says (a listing after the reads showed more, or the
    directory's stat disagreed with the events in hand): check again at once; that check lists."""


class SessionWatch:
    """Calls back when the session's connection state changes (on kazoo's thread: never block).

    ``on_connected(session_id)`` after every (re)connection: the same session id as before means
    the session survived (only the watches are gone), a new one that it expired meanwhile.
    """

    def __init__(
        self,
        session: ZkSession,
        *,
        on_connected: Callable[[int | None], None],
        on_suspended: Callable[[], None] = lambda: None,
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.session = session
        self._on_connected = on_connected
        self._on_suspended = on_suspended
        self._on_lost = on_lost

    def start(self) -> None:
        self.session.client.add_listener(self._on_state)

    def stop(self) -> None:
        self.session.client.remove_listener(self._on_state)

    @property
    def session_id(self) -> int | None:
        """The current session's id (None before the first connection)."""
        return self.session.session_id

    @property
    def connected(self) -> bool:
        return bool(self.session.client.connected)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._on_lost()
        elif state == KazooState.SUSPENDED:
            self._on_suspended()
        elif state == KazooState.CONNECTED:
            self._on_connected(self.session_id)


class NotificationWatch:
    """The children of ``path`` named ``prefix`` + 10 digits, with a watch that calls
    ``on_change()`` when one is created (on kazoo's thread: never block).

    With ``tree`` (a path that contains ``path``: Kafka's ``/config`` for ``/config/changes``) the
    watch is a persistent recursive one on it (:mod:`configctl.zk.treewatch`) where ZooKeeper has
    them: it names the new notifications and the nodes changed with them, which :meth:`check`
    reads in the listing's round trip. Otherwise it is a one-shot child watch, re-armed by every
    listing.

    Names are ``prefix`` + 10 zero-padded digits, so string order is number order: callers find
    new notifications by comparing names, and parse only those. Any other child is told once to
    ``on_bad_name`` and otherwise ignored (still :meth:`present`).
    """

    def __init__(
        self,
        session: ZkSession,
        path: str,
        prefix: str,
        *,
        on_change: Callable[[], None],
        on_bad_name: Callable[[str], None] = lambda name: None,
        tree: str | None = None,
    ) -> None:
        self.session = session
        self.path = path.rstrip("/")
        self.prefix = prefix
        self._on_change = on_change
        self._on_bad_name = on_bad_name
        self._hints_lock = threading.Lock()
        self._told: list[tuple[int, str]] = []  # the tree watch's events on children, in order
        self._changed: set[str] = set()  # other nodes below the tree it saw change
        self._must_list = True  # the hints cannot be trusted to be complete: the next check lists
        self._tree = None if tree is None else treewatch.TreeWatch(session, tree, self._on_tree_event)
        self._known: set[str] = set()  # valid notification names of the last listing
        self._bad_names: set[str] = set()
        self._created: int | None = None  # the directory's creation zxid, as last listed
        self.recreated = False
        """The last listing found the directory created anew since the one before (deleted and made
        again): its sequence counter restarted, so numbers seen before mean nothing now."""

    def close(self) -> None:
        """Stop hearing the tree watch (kazoo's one-shot child watch simply never fires again)."""
        if self._tree is not None:
            self._tree.close()

    # -- names ----------------------------------------------------------------------------------

    def valid(self, name: str) -> bool:
        digits = name[len(self.prefix) :]
        return name.startswith(self.prefix) and len(digits) == 10 and digits.isascii() and digits.isdigit()

    def number(self, name: str) -> int:
        return int(name[len(self.prefix) :])

    def name_of(self, number: int) -> str:
        return f"{self.prefix}{number:010d}"

    # -- listing --------------------------------------------------------------------------------

    def list(self, *, watch: bool) -> set[str]:
        """The notification names under the path now, the child watch armed when ``watch``.

        A path that does not exist yet is watched for its creation; if it appeared between the
        listing and that watch (which is then only a data watch, which children never fire), it
        is listed again (:func:`configctl.zk.retry.conflict_retry`).
        """
        try:
            children = retry.conflict_retry()(self._list_once, watch)
        except retry.RetriesExhausted:
            raise ZooKeeperUnavailable(f"{self.path} keeps appearing and vanishing; cannot list it") from None
        return self._accept(children)

    def _accept(self, children: tuple[list[str], Any] | None) -> set[str]:
        """A listing taken in: only children not seen in the previous listing are checked for the
        name format, so a directory holding thousands of unexpired notifications costs set
        operations per listing, not a parse of every name."""
        if children is None:
            self._known = set()
            return set()
        names, stat = children
        self.recreated = self._created is not None and stat.czxid != self._created
        self._created = stat.czxid
        if self.recreated:
            self._known, self._bad_names = set(), set()
        current = set(names)
        known = current & self._known
        for name in current - self._known - self._bad_names:
            if self.valid(name):
                known.add(name)
            else:
                self._bad_names.add(name)
                self._on_bad_name(name)
        self._known = known
        return known

    def _list_once(self, watch: bool) -> tuple[list[str], Any] | None:
        """The children and the directory's stat, or None when the path does not exist (watched
        for, with ``watch``)."""
        client, timeout = self.session.client, self.session.timeout
        with translate_errors(f"list {self.path}"):
            try:
                return self._send_listing(watch).get(timeout=timeout)
            except NoNodeError:
                pass
            # Nothing was ever written: be told when the first notification creates the path.
            if (
                not watch
                or client.exists_async(self.path, watch=self._on_children).get(timeout=timeout) is None
            ):
                return None
        raise retry.RetryNow()  # it exists now: list it, with the child watch

    def _send_listing(self, child_watch: bool) -> Any:
        """The listing in flight: the children and the directory's stat, Kafka's one-shot child
        watch armed with it when ``child_watch``."""
        with translate_errors(f"list {self.path}"):
            return self.session.client.get_children_async(
                self.path, watch=self._on_children if child_watch else None, include_data=True
            )

    def present(self) -> set[str]:
        """Every child of the last listing (notifications and the others), less those forgotten."""
        return self._known | self._bad_names

    def forget(self, names: Iterable[str]) -> None:
        """These notifications are gone (purged): no longer :meth:`present`."""
        self._known.difference_update(names)

    def _on_children(self, event: WatchedEvent) -> None:
        if event.type == EventType.NONE:  # the connection dropped: the caller lists on reconnection
            return
        self._on_change()

    # -- the tree watch's hints -----------------------------------------------------------------

    def _on_tree_event(self, kind: int, path: str) -> None:
        """kazoo's connection thread: note what changed, wake the caller for a new notification."""
        parent, _, name = path.rpartition("/")
        if parent == self.path:
            if kind in (treewatch.CREATED, treewatch.DELETED):
                with self._hints_lock:
                    if len(self._told) < MAX_HINTS:
                        self._told.append((kind, name))
                    else:
                        self._must_list = True
                if kind == treewatch.CREATED:
                    self._on_change()
            return
        if path == self.path:  # the directory itself made (or deleted): list it
            self._distrust()
            self._on_change()
            return
        with self._hints_lock:
            if len(self._changed) < MAX_HINTS:
                self._changed.add(path)

    def forget_hints(self) -> None:
        """Drop what the tree watch told so far: a full load reads everything, and its listing is
        the new baseline (the next check lists too)."""
        with self._hints_lock:
            self._told.clear()
            self._changed.clear()
            self._must_list = True

    @property
    def tree_armed(self) -> bool:
        """The tree watch holds on this connection (the listing needs no child watch)."""
        return self._tree is not None and self._tree.armed

    # -- one check: the listing and the reads, in one round trip ---------------------------------

    def check(self, after: int | None, speculate: int, *, listing: bool = False) -> PendingCheck:
        """Send, without waiting, what one check needs; :meth:`PendingCheck.result` collects it.

        With the tree watch armed and trusted (a listing on this connection, every event since
        in hand: see :meth:`PendingCheck.result`) that is one multiRead: the directory's own stat
        (how many children it has), the new notifications the watch named, and the nodes it saw
        change. Otherwise, in this order: the tree watch (when this connection lacks it), the
        listing (with Kafka's one-shot child watch when there is no tree watch), and the same
        multiRead, where without a tree watch the notifications are a guess, the ``speculate``
        numbers after ``after`` (after a watch fires the new one is almost always ``after + 1``;
        a wrong guess costs a "no node" answer). ``listing``: list whatever the watch says.

        ZooKeeper answers a session's requests in order and tells its events before the answers
        that show their change, so every node read here is read after every notification told
        before the check was sent, and after every one the listing sent ahead of the reads shows.
        Those are the only names :meth:`PendingCheck.result` hands over: a notification seen only
        later (a listing taken after the reads) may describe a write the reads missed, so it waits
        for the next check, whose reads follow its listing.
        """
        tree = self._tree
        use_tree = tree is not None and tree.supported
        arming = tree.arm() if use_tree and tree is not None and not tree.armed else None
        with self._hints_lock:
            told, self._told = self._told, []
            changed = sorted(self._changed)
            self._changed.clear()
            trusted = use_tree and arming is None and not self._must_list and not listing
            self._must_list = False
        pending_listing = None if trusted else self._send_listing(not use_tree)
        if use_tree:
            floor = "" if after is None else self.name_of(after)
            names = sorted(
                {
                    name
                    for kind, name in told
                    if kind == treewatch.CREATED and name > floor and self.valid(name)
                }
            )
        elif after is None or speculate <= 0:
            names = []
        else:
            names = [self.name_of(n) for n in range(after + 1, min(after + 1 + speculate, MAX_SEQUENCE + 1))]
        paths = ([self.path] if trusted else []) + [f"{self.path}/{name}" for name in names] + changed
        return PendingCheck(
            self,
            after,
            use_tree,
            arming,
            pending_listing,
            told,
            names,
            changed,
            self.session.read_later(paths),
        )

    def _replay(self, told: Sequence[tuple[int, str]]) -> None:
        """The tree watch's events, in order, on the last listing. Each is about a name that
        ZooKeeper never gives twice, so one already in that listing changes nothing."""
        for kind, name in told:
            if kind == treewatch.DELETED:
                self._known.discard(name)
                self._bad_names.discard(name)
            elif name in self._known or name in self._bad_names:
                continue
            elif self.valid(name):
                self._known.add(name)
            else:
                self._bad_names.add(name)
                self._on_bad_name(name)

    def _distrust(self) -> None:
        with self._hints_lock:
            self._must_list = True

    def _restore(self, told: Sequence[tuple[int, str]], changed: Iterable[str]) -> None:
        """Give back the hints a check took and did not hand over: the next check (which lists)
        reads them again, after its listing. They came before any told since, so they go first."""
        with self._hints_lock:
            self._told[:0] = told
            del self._told[MAX_HINTS:]
            self._changed.update(changed)
            self._must_list = True

    def _relist(self, names: set[str]) -> bool:
        """List again, Kafka's child watch armed (the listing sent with the reads had none, or the
        directory was absent). True when it shows notifications ``names`` lacks: made after the
        reads were sent, they wait for the next check."""
        recreated = self.recreated
        self.list(watch=True)
        self.recreated = recreated or self.recreated
        return not self._known <= names

    def _list_while_busy(self) -> None:
        """After a check that listed: events that came in meanwhile mean changes are still arriving,
        and a check without a listing would likely find the stat one ahead of its events (and list
        after all, a round trip later): the next check lists too, in the same round trip as its reads."""
        with self._hints_lock:
            if self._told:
                self._must_list = True

    # -- reads ----------------------------------------------------------------------------------

    def read(self, names: Sequence[str]) -> dict[str, Read]:
        """The notifications ``names``, in few round trips; a node that may not be read gives its
        error, one that no longer exists None."""
        if not names:
            return {}
        found = self.session.get_many([f"{self.path}/{name}" for name in names], node_errors=True)
        return dict(zip(names, map(_read, found), strict=True))


class PendingCheck:
    """A check in flight (:meth:`NotificationWatch.check`)."""

    def __init__(
        self,
        watch: NotificationWatch,
        after: int | None,
        use_tree: bool,
        arming: treewatch.PendingArm | None,
        listing: Any,
        told: Sequence[tuple[int, str]],
        names: Sequence[str],
        changed: Sequence[str],
        reads: PendingRead,
    ) -> None:
        self._watch, self._after, self._use_tree, self._arming = watch, after, use_tree, arming
        self._listing, self._told, self._names, self._changed = listing, told, names, changed
        self._reads = reads

    def result(self) -> CheckResult:
        """What the check found (:class:`CheckResult`). A new notification the tree watch told of is
        among the names even when it is already gone, so the caller finds it vanished (and
        reloads: the change it announced is unknown).

        Without a listing, the names are the last listing's with the tree watch's events
        replayed on it, trusted only if the directory's stat, read in the same multiRead, agrees:
        as many children, and the same directory (its creation zxid). Every event the stat counts
        was told before its answer, so what agrees is complete. It can disagree without a lost
        event (an event on its way while the stat was read). Then only the notifications told
        are handed over, and only when they are every number after ``after`` (none can be missing
        below them: a flood of changes, as a listener catching up sees, keeps its reads); a
        notification only a listing would show may be newer than the reads, so it waits for the
        next check, which lists, with its reads after the listing in the same round trip. When
        the told ones leave a gap, nothing is handed over and the hints go back to that check.
        """
        watch = self._watch
        armed = self._arming.result() if self._arming is not None else watch.tree_armed
        reads = self._reads.result(node_errors=True)
        again = False
        if self._listing is None:
            directory, reads = reads[0], reads[1:]
            watch._replay(self._told)
            stat = directory[1] if isinstance(directory, tuple) else None
            agrees = (
                stat is not None
                and stat.czxid == watch._created
                and stat.numChildren == len(watch._known) + len(watch._bad_names)
            )
            if agrees:
                watch.recreated = False
                names = set(watch._known)
            elif stat is not None and stat.czxid == watch._created and self._no_gap():
                watch._distrust()
                watch.recreated = False
                names, again = set(self._names), True
            else:
                watch._restore(self._told, self._changed)
                return CheckResult(set(), {}, {}, again=True)
        else:
            with translate_errors(f"list {watch.path}"):
                try:
                    children = self._listing.get(timeout=watch.session.timeout)
                except NoNodeError:
                    children = None
            watch._accept(children)
            watch._replay(self._told)
            names = set(watch._known)
            if self._use_tree and not armed:
                # sent without the child watch, and the tree watch did not take: list with it
                watch._distrust()
                again = watch._relist(names)
            elif children is None and not self._use_tree:
                again = watch._relist(names)  # absent: be told when it is made (the child watch)
            elif self._use_tree:
                watch._list_while_busy()
        if self._use_tree:  # told of, so made: one gone already (purged) is a change lost: the caller reloads
            names.update(self._names)
        notifications = dict(zip(self._names, map(_read, reads[: len(self._names)]), strict=True))
        changed = dict(zip(self._changed, reads[len(self._names) :], strict=True))
        return CheckResult(names, notifications, changed, again)

    def _no_gap(self) -> bool:
        """The notifications told are every number after ``after``: none is missing below them."""
        if self._after is None or not self._names:
            return False
        numbers = [self._watch.number(name) for name in self._names]  # sorted, as names are
        return numbers == list(range(self._after + 1, self._after + 1 + len(numbers)))


def _read(found: Any) -> Read:
    if found is None or isinstance(found, Exception):
        return found
    data, stat = found
    return Notified(data, stat.ctime, stat.czxid)


__all__ = [
    "MAX_SEQUENCE",
    "CheckResult",
    "NotificationWatch",
    "Notified",
    "PendingCheck",
    "Read",
    "SessionWatch",
]
