"""Kazoo's exceptions become configctl's errors here, at the I/O edge, and nowhere else.

Callers above :mod:`configctl.zk` see only :mod:`configctl.errors` classes (each with its exit
status), plus :class:`VersionConflict`, which the write path handles itself by re-reading.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionClosedRequireSaslError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import RetryFailedError

from configctl.errors import PermissionDenied, ZooKeeperUnavailable
from configctl.store import VersionConflict as VersionConflict  # the store's vocabulary, named here too

LOST = (ConnectionLoss, SessionExpiredError, KazooTimeoutError, OperationTimeoutError, RetryFailedError)
"""The connection went away: whatever was in flight may or may not have reached the server."""


@contextlib.contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Turn kazoo's exceptions into one-line configctl errors; ``action`` completes "trying to ...".

    NoNode, NodeExists and BadVersion pass through: they are answers the caller acts on.
    """
    try:
        yield
    except NoAuthError:
        raise PermissionDenied(
            f"ZooKeeper refused to {action}: no permission (check --zk-auth / --zk-sasl)"
        ) from None
    except AuthFailedError:
        raise PermissionDenied("ZooKeeper rejected the credentials (--zk-auth / --zk-sasl)") from None
    except SessionClosedRequireSaslError:
        raise PermissionDenied(
            f"ZooKeeper refused to {action}: it requires a SASL login (--zk-sasl digest:USER)"
        ) from None
    except LOST:
        raise ZooKeeperUnavailable(f"lost the connection to ZooKeeper while trying to {action}") from None
    except (NoNodeError, NodeExistsError, BadVersionError):
        raise
    except KazooException as exc:
        raise ZooKeeperUnavailable(f"ZooKeeper failed to {action}: {type(exc).__name__}") from None


def translated(exc: BaseException, action: str) -> Exception:
    """The configctl error :func:`translate_errors` would raise for ``exc`` (for per-node answers)."""
    try:
        with translate_errors(action):
            raise exc
    except Exception as error:
        return error
    return exc  # pragma: no cover - the block above always raises
