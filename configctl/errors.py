"""Errors the user can act on, each with its documented exit status.

Every failure that reaches the command line is one of these; the CLI prints
``error: <message>`` on one line and exits with ``exit_code``. Anything else is a bug.
"""

from __future__ import annotations

from collections.abc import Sequence

ECHO_LIMIT = 80
"""Echoed input is cut to this many characters: an error line stays one readable line."""


class ConfigctlError(Exception):
    """Base class: a one-line, user-facing message and an exit status."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidInput(ConfigctlError):
    """The input (entity name, config key or value, file) is wrong. Nothing was written."""

    exit_code = 1


class ValidationFailed(InvalidInput):
    """A config change fails the schema; carries every problem, not just the first.

    The message counts every problem found but lists at most :attr:`SHOWN` of them (a file with
    ten thousand bad keys is still one readable line); :attr:`problems` keeps them all.
    """

    SHOWN = 100

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        listed = self.problems[: self.SHOWN]
        if len(self.problems) > self.SHOWN:
            listed.append(f"... and {len(self.problems) - self.SHOWN} more")
        joined = "; ".join(listed)
        super().__init__(
            f"invalid config: {joined}"
            if len(self.problems) == 1
            else f"{len(self.problems)} problems: {joined}"
        )


class WrongCluster(InvalidInput):
    """``--bootstrap-server`` and ``--zookeeper`` are two Kafka clusters (their cluster ids differ):
    a write would go half to one and half to the other, so none is made. Exit 1, like any
    contradictory options; nothing was written."""


class ZooKeeperUnavailable(ConfigctlError):
    """ZooKeeper could not be reached (or the session was lost) before the write committed."""

    exit_code = 3


class KafkaUnavailable(ConfigctlError):
    """No Kafka broker could be reached (or the one asked is gone): the Admin API request was not
    sent, or it asked only (a read, a validation), so nothing was written by it."""

    exit_code = 3


class BrokerRefused(InvalidInput):
    """A Kafka broker refused the request and said why; nothing was changed by it."""


class PermissionDenied(ConfigctlError):
    """ZooKeeper (or a Kafka broker) refused the operation: ACL, authentication, authorization."""

    exit_code = 4


class Conflict(ConfigctlError):
    """The stored state moved under us: ``--if-version`` mismatch, retries exhausted, or a stale plan."""

    exit_code = 5


class NotFound(ConfigctlError):
    """The thing asked for does not exist (history version, running server, entity)."""

    exit_code = 6


class EnvironmentProblem(ConfigctlError):
    """The machine cannot do what was asked: no Java, a busy port, missing ZooKeeper jars."""

    exit_code = 7


class PartiallyWritten(ConfigctlError):
    """Some of what was asked is committed and some is not, or a commit's outcome is unknown.

    The message always says which entities were committed, which were not, and which are
    unknown (the connection dropped after the transaction was sent): the operator must never
    read "nothing was written" after a write landed.
    """

    exit_code = 8

    def __init__(
        self,
        message: str,
        *,
        committed: Sequence[str] = (),
        not_committed: Sequence[str] = (),
        unknown: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.committed = list(committed)
        self.not_committed = list(not_committed)
        self.unknown = list(unknown)


def unrecorded(display: str, path: str, cause: ConfigctlError) -> PartiallyWritten:
    """A write the cluster took whose history record could not be written: exit 8, saying so.

    The config is in the cluster (a broker took it through its Admin API, which shares no
    transaction with configctl's history), only its record is missing: "nothing was written"
    would be false, and history will show the write as made outside configctl.
    """
    return PartiallyWritten(
        f"{display}: written to the cluster, but its history record was not ({cause.message}); "
        "history will show it as written outside configctl",
        committed=[path],
    )


class KafkaAnswerLost(PartiallyWritten):
    """An Admin API write reached a broker and its answer never came (a timeout, a connection cut,
    Ctrl-C): the broker may have written it, or may yet. Not "nothing written" (exit 3): its
    outcome is unknown (exit 8). The write path re-reads ZooKeeper, says what it holds and
    records a write that landed (:mod:`configctl.interrupted`); a ZooKeeper read is not ordered
    after the broker's work, so a write not there yet stays unknown rather than "not committed".
    """

    def __init__(self, message: str, entity_path: str) -> None:
        super().__init__(message, unknown=[entity_path])


class BrokersRefused(ConfigctlError):
    """The write is committed, but a live broker refused it (rejected, ignored or could not read it)."""

    exit_code = 9


class WaitTimedOut(ConfigctlError):
    """The write is committed, but not every known broker applied it before the wait ended."""

    exit_code = 10


class RolloutAborted(ConfigctlError):
    """A canary or wave failed and the rollout was undone: every entity it touched has its exact
    previous bytes again (the undo is recorded in the entities' history)."""

    exit_code = 11


class RolloutStuck(ConfigctlError):
    """A rollout stopped and could not finish or undo itself; its record under
    ``/configctl/rollouts/<id>`` says what to do (``configctl rollout abort|resume ID``)."""

    exit_code = 12


class MigrationInProgress(ConfigctlError):
    """ZooKeeper no longer owns the cluster's metadata, so nothing may be written under ``/config``.

    A KRaft controller is registered in ``/controller`` (``kraftControllerEpoch`` above 0), a
    ZooKeeper-to-KRaft migration is recorded in ``/migration``, or ``/controller`` cannot be read
    (so neither can be ruled out). Kafka 3.9's brokers refuse their own ZooKeeper config writes in
    the first case (KAFKA-16539): a write there would be ignored by the KRaft controller or lost
    when it writes its metadata back. See :mod:`configctl.migration`.
    """

    exit_code = 14


class BeyondHorizon(ConfigctlError):
    """A question about a moment older than what configctl's history (or an archive) still holds
    for an entity the answer depends on: answered with the horizon, never with a guess."""

    exit_code = 13


EXIT_CODES = {
    0: "success (plan: no changes; --wait: every known broker applied it)",
    1: "invalid input: bad entity, key, value or file; nothing was written",
    2: "command-line usage error (click); plan: there are changes; audit --fail-on-drift: drift found",
    3: "ZooKeeper (or, through the Admin API, every Kafka broker) unreachable or session lost; nothing was written",
    4: "permission denied by ZooKeeper ACLs or authentication, or a broker's authorizer; nothing was written",
    5: "conflict: version check failed, retries exhausted, or state moved since the plan; nothing was written",
    6: "not found; nothing was written",
    7: "environment problem: Java missing, port busy, ZooKeeper jars not found; nothing was written",
    8: "partly written, or a commit's outcome unknown: the message names what was and was not committed",
    9: "written, but a live broker refused it (--wait: rejected, ignored or unreadable)",
    10: "written, but not every known broker applied it in time (--wait ended first)",
    11: "rollout aborted: every entity it touched is restored to its previous bytes",
    12: "rollout stuck: its record says what to undo (configctl rollout abort|resume ID)",
    13: "beyond the horizon: the history kept does not reach back to the time asked (--at); nothing was written",
    14: "refused: a KRaft controller owns the metadata or a ZooKeeper-to-KRaft migration is under way (/controller, /migration); nothing was written",
}


def one_line(text: object, limit: int | None = None) -> str:
    """``text`` (or an exception's message) on one line: whitespace runs folded, optionally cut.

    Every message that reaches a terminal or a log goes through here, so an exception carrying a
    traceback-shaped message or a 50 MB input never becomes more than one short line.
    """
    raw = str(text)
    folded = " ".join(raw.split()) or (type(text).__name__ if isinstance(text, BaseException) else "")
    if limit is not None and len(folded) > limit:
        return folded[: max(0, limit - 1)] + "…"
    return folded


def shown(value: str, limit: int = ECHO_LIMIT) -> str:
    """A user's input quoted for an error message: ``repr`` of a short prefix, never the whole of it."""
    text = value if len(value) <= limit else value[:limit]
    quoted = repr(text)
    return quoted if len(value) <= limit else f"{quoted}… ({len(value)} characters)"


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
_CONTROL.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x1B: "\\e"})


def printable(text: str) -> str:
    """``text`` with every control character escaped (``\\n``, ``\\e``, ``\\x07``): what reaches a
    terminal or a log line can neither break the line nor drive the terminal (ANSI escapes)."""
    return text.translate(_CONTROL)
