"""The Kafka client's exceptions become configctl's errors here, at the I/O edge, and nowhere else.

The Kafka client is imported when an error is first translated, not with this module: a
listener that is no sidecar should not carry the Kafka client's 60-odd modules (about 8 MB).
What they become (:class:`~configctl.errors.KafkaUnavailable`,
:class:`~configctl.errors.BrokerRefused`, ...) is in the one error table, :mod:`configctl.errors`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from configctl.errors import (
    BrokerRefused,
    ConfigctlError,
    EnvironmentProblem,
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
    _FAILURES.watch()
    return kafka_errors, unreachable, denied


class _Failures(logging.Handler):
    """Why the Kafka client's last connection attempt failed: it retries until its bootstrap
    timeout and then says only that it could not bootstrap, so the reason (a refused SASL login,
    a certificate not trusted) is taken from what it logs on the way, and never shown as a log."""

    LOGGER = "kafka.net.manager"

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._lock_ = threading.Lock()
        self._seen: collections.deque[tuple[float, BaseException]] = collections.deque(maxlen=32)

    def watch(self) -> None:
        logger = logging.getLogger(self.LOGGER)
        if self not in logger.handlers:
            logger.addHandler(self)
            logger.setLevel(logging.WARNING)  # its records reach this handler, and no other
            logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        found = [
            a for a in (record.args if isinstance(record.args, tuple) else ()) if isinstance(a, BaseException)
        ]
        if found:
            with self._lock_:
                self._seen.append((time.monotonic(), found[-1]))

    def since(self, start: float) -> list[BaseException]:
        """The failures logged since ``start``, newest first (the client's own "unable to
        bootstrap" last of all, after the reasons it had)."""
        with self._lock_:
            return [failure for at, failure in reversed(self._seen) if at >= start]


_FAILURES = _Failures()


def _failed_at_once(bootstrap: str, node: str) -> None:
    """Refuse now an address whose name does not resolve or that refuses the connection."""
    from configctl.adminapi.connection import failing_at_once

    why = failing_at_once(bootstrap)
    if why:
        raise KafkaUnavailable(f"no {node} at {bootstrap} answered while trying to connect: {why}")


def _named(failures: list[BaseException], bootstrap: str, action: str) -> ConfigctlError | None:
    """The error the connection failures the client logged mean: a refused login, a certificate
    not trusted, a TLS handshake that failed (None: none of these; the plain "no answer")."""
    kafka_errors, _, _ = _kafka()
    for failure in failures:
        if isinstance(failure, kafka_errors.SaslAuthenticationFailedError):
            return PermissionDenied(
                f"authentication failed at Kafka ({bootstrap}) while trying to {action}: {_reason(failure)}"
            )
    links = [link for failure in failures for link in (failure, failure.__cause__, failure.__context__)]
    for link in links:
        if isinstance(link, ssl.SSLCertVerificationError):
            return PermissionDenied(
                f"TLS: the certificate of the Kafka broker at {bootstrap} is not trusted "
                f"({link.verify_message or _reason(link)}): check ssl.truststore.* in --command-config"
            )
    for link in links:
        if isinstance(link, ssl.SSLError):
            return KafkaUnavailable(
                f"TLS handshake with the Kafka broker at {bootstrap} failed while trying to {action}: "
                f"{_reason(link)}"
            )
    return None


BROKER, CONTROLLER = "Kafka broker", "Kafka controller"
"""What the addresses a client was given are (``--bootstrap-server``, ``--bootstrap-controller``)."""

CONNECT = "connect"
"""The action of a client's first connection (:func:`translate_errors`): its definite failures
(a name that does not resolve, a connection refused) are found at once, before the client waits."""


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
    action: str,
    bootstrap: str,
    *,
    writes: str | None = None,
    sent: Callable[[], bool] = lambda: False,
    node: str = BROKER,
) -> Iterator[None]:
    """Turn the Kafka client's exceptions into one-line configctl errors; ``action`` completes "to ...".

    A failure means "nothing written" only while the request had not left: once a write request
    (``writes``: the entity it changes) was sent (``sent()``), whatever ends the wait for its
    answer (a timeout, a connection cut, Ctrl-C) leaves its outcome unknown:
    :class:`~configctl.errors.KafkaAnswerLost`, never :class:`~configctl.errors.KafkaUnavailable`.
    ``node`` is what the addresses are, as "no ... answered" names them (:data:`CONTROLLER` for
    ``--bootstrap-controller``).
    """
    if action == CONNECT:
        _kafka()
        _failed_at_once(bootstrap, node)
    try:
        with _translated(action, bootstrap, node):
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
def _translated(action: str, bootstrap: str, node: str) -> Iterator[None]:
    kafka_errors, unreachable, denied = _kafka()
    start = time.monotonic()
    try:
        yield
    except kafka_errors.SaslAuthenticationFailedError as exc:
        raise PermissionDenied(
            f"authentication failed at Kafka ({bootstrap}) while trying to {action}: {_reason(exc)}"
        ) from None
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
        named = _named(_FAILURES.since(start), bootstrap, action)
        if named is not None:
            raise named from None
        raise KafkaUnavailable(f"no {node} at {bootstrap} answered while trying to {action}") from None
    except kafka_errors.UnsupportedCodecError as exc:
        # the records were compressed with a codec this client cannot read (lz4, zstd, snappy:
        # a broker or topic compression.type): not a refusal, the machine lacks the codec
        raise EnvironmentProblem(
            f"Kafka ({bootstrap}) holds records compressed with a codec configctl's client cannot read "
            f"while trying to {action} ({_reason(exc)}); set compression.type=producer on that topic "
            "(configctl's own topics are created so)"
        ) from None
    except kafka_errors.KafkaError as exc:
        raise BrokerRefused(f"Kafka failed to {action}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
