"""The Kafka client's exceptions become configctl's errors here, at the I/O edge, and nowhere else.

The Kafka client is imported when an error is first translated, not with this module: a
listener that is no sidecar should not carry the Kafka client's 60-odd modules (about 8 MB).
What they become (:class:`~configctl.errors.KafkaUnavailable`,
:class:`~configctl.errors.BrokerRefused`, ...) is in the one error table, :mod:`configctl.errors`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from configctl.errors import (
    BrokerRefused,
    ConfigctlError,
    KafkaAnswerLost,
    KafkaUnavailable,
    PermissionDenied,
)


@cache
def _kafka() -> Any:
    """``kafka.errors``, and which of its exceptions mean unreachable and which denied."""
    import kafka.errors as kafka_errors

    unreachable = (
        kafka_errors.KafkaConnectionError,
        kafka_errors.MetadataEmptyBrokerList,
        kafka_errors.UnrecognizedBrokerVersion,
        kafka_errors.KafkaTimeoutError,
        kafka_errors.RequestTimedOutError,
        kafka_errors.NodeNotReadyError,
        kafka_errors.BrokerNotAvailableError,
    )
    denied = (
        kafka_errors.ClusterAuthorizationFailedError,
        kafka_errors.TopicAuthorizationFailedError,
        kafka_errors.AuthorizationError,
        kafka_errors.SaslAuthenticationFailedError,
    )
    return kafka_errors, unreachable, denied


def refusal(error_code: int, message: str | None, what: str) -> BrokerRefused | PermissionDenied | None:
    """The error a per-resource error code in a response means (None for no error)."""
    if not error_code:
        return None
    kafka_errors, _, denied = _kafka()
    kind = kafka_errors.for_code(error_code)
    reason = " ".join((message or kind.__name__).split())
    if issubclass(kind, denied):
        return PermissionDenied(f"the broker refused to {what}: {reason}")
    return BrokerRefused(f"the broker refused to {what}: {reason}")


@contextlib.contextmanager
def translate_errors(
    action: str, bootstrap: str, *, writes: str | None = None, sent: Callable[[], bool] = lambda: False
) -> Iterator[None]:
    """Turn the Kafka client's exceptions into one-line configctl errors; ``action`` completes "to ...".

    A failure means "nothing written" only while the request had not left: once a write request
    (``writes``: the entity it changes) was sent (``sent()``), whatever ends the wait for its
    answer (a timeout, a connection cut, Ctrl-C) leaves its outcome unknown:
    :class:`~configctl.errors.KafkaAnswerLost`, never :class:`~configctl.errors.KafkaUnavailable`.
    """
    try:
        with _translated(action, bootstrap):
            yield
    except (Exception, KeyboardInterrupt) as exc:
        if writes is None or not sent():
            raise
        cause = exc.__context__ if isinstance(exc, ConfigctlError) and exc.__context__ is not None else exc
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else _reason(cause)[:200]
        raise KafkaAnswerLost(
            f"the request to {action} was sent to Kafka ({bootstrap}) and never answered ({why}): "
            "it may have been written",
            writes,
        ) from None


@contextlib.contextmanager
def _translated(action: str, bootstrap: str) -> Iterator[None]:
    kafka_errors, unreachable, denied = _kafka()
    try:
        yield
    except denied as exc:
        raise PermissionDenied(f"Kafka refused to {action}: {_reason(exc)}") from None
    except kafka_errors.UnknownBrokerIdError as exc:
        # The broker asked for is not in the cluster's metadata: it is not running. Another broker
        # answering instead would be a lie about this one, so it is unavailable, not a refusal.
        raise KafkaUnavailable(
            f"broker {' '.join(str(a) for a in exc.args) or '?'} is not in the cluster's metadata "
            f"(not running) while trying to {action}"
        ) from None
    except unreachable:
        raise KafkaUnavailable(f"no Kafka broker at {bootstrap} answered while trying to {action}") from None
    except kafka_errors.KafkaError as exc:
        raise BrokerRefused(f"Kafka failed to {action}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
