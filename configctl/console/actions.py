"""What the console may do (``serve --allow-actions``): each action is the CLI command's own feature call.

``abort`` is ``configctl rollout abort ID``: the same :func:`configctl.rollout.control.abort`,
judged by the same :func:`configctl.rollout.outcome.raise_for_abort`, so the console answers with
the document ``-o json`` prints and the exit status the command would end with (0, or the
:mod:`configctl.errors` class's, with its one line). Nothing of the command is copied here: a
front end only translates, so the two can never disagree about what an abort did.

The actions write through a store of their own, opened with the console's identity plus
``via console`` (what the history records and the rollout's events then name), so the read
store the watch hub shares is never used to write. ``--force`` stays with the CLI: restoring over
someone else's newer change is a decision for a person at a terminal who has read
``configctl rollout show``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from configctl.errors import ConfigctlError, InvalidInput, printable
from configctl.rollout import control, outcome
from configctl.rollout.parsing import check_rollout_id
from configctl.store import ConfigStore

log = logging.getLogger(__name__)

VIA = "via console"
"""Appended to the identity that writes: the history says the change came from the console."""

REASON_LIMIT = 500
"""A longer reason is refused: it is one line in every history record the abort writes."""

_HTTP_STATUS = {
    0: 200,
    1: 400,  # not a rollout id
    3: 503,  # ZooKeeper lost
    4: 403,  # ZooKeeper's ACLs refused the console's identity
    5: 409,  # already ended, or it kept changing
    6: 404,  # no such rollout
    12: 409,  # refused: an entity moved since the rollout wrote it (nothing restored)
    14: 409,  # refused: KRaft owns the metadata
}


def console_identity(identity: str) -> str:
    """The identity the console's actions write as: the operator's own, marked as the console's."""
    return f"{identity} {VIA}"


def check_reason(given: Any) -> str:
    """The reason an action must carry (the history shows it); a one-line error otherwise."""
    if not isinstance(given, str) or not given.strip():
        raise InvalidInput('a reason is required: {"reason": "why"} (it is recorded in the history)')
    reason = given.strip()
    if len(reason) > REASON_LIMIT or not reason.isprintable():
        raise InvalidInput(f"the reason must be one line of at most {REASON_LIMIT} printable characters")
    return reason


@dataclass(frozen=True)
class Outcome:
    """An action's answer: what the CLI would print on stdout and stderr, and its exit status."""

    action: str
    rollout_id: str
    identity: str
    exit_code: int
    error: str | None
    document: dict[str, Any] | None

    @property
    def http_status(self) -> int:
        """200 on exit 0, 409 when refused because of the rollout's state, else what the error means."""
        return _HTTP_STATUS.get(self.exit_code, 500)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "rollout_id": self.rollout_id,
            "identity": self.identity,
            "exit_code": self.exit_code,
            "error": self.error,
            "document": self.document,
        }


class Actions:
    """The console's actions, on the store they write through (opened by ``serve``)."""

    def __init__(self, store: ConfigStore) -> None:
        self.store = store
        self._one_at_a_time = threading.Lock()  # a second click waits and then reads "already ended"

    @property
    def identity(self) -> str:
        return self.store.identity

    def abort(self, rollout_id: str, reason: str, *, client: str = "") -> Outcome:
        """``configctl rollout abort ID --reason REASON -o json``, as its document and exit status.

        Blocking (ZooKeeper writes): the app runs it on a worker thread.
        """
        document: dict[str, Any] | None = None
        try:
            check_rollout_id(rollout_id)
            with self._one_at_a_time:
                report = control.abort(self.store, rollout_id, force=False, reason=reason)
            document = report.to_json()
            outcome.raise_for_abort(report, rollout_id)
        except ConfigctlError as exc:
            result = Outcome(
                "abort", rollout_id, self.identity, exc.exit_code, printable(exc.message), document
            )
        else:
            result = Outcome("abort", rollout_id, self.identity, 0, None, document)
        log.info(
            "abort of rollout %s as %s from %s, reason %s: exit %d%s",
            printable(rollout_id),
            printable(self.identity),
            printable(client) or "?",
            printable(repr(reason)),
            result.exit_code,
            f": {result.error}" if result.error else "",
        )
        return result
