"""The Admin API edge tells a write that never left from one whose answer was lost (issue 36).

"No Kafka broker answered" (exit 3) promises nothing was written; it holds only while the request
had not been sent. Once a write request is on its way, whatever ends the wait for its answer
leaves its outcome unknown: :class:`KafkaAnswerLost`, exit 8, naming the entity.
"""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest

from configctl.adminapi.errors import translate_errors
from configctl.errors import BrokerRefused, KafkaAnswerLost, KafkaUnavailable, PartiallyWritten

pytestmark = pytest.mark.unit

LOST = [
    kafka_errors.RequestTimedOutError("Request timed out after 4000 ms"),
    kafka_errors.KafkaConnectionError("connection reset"),
    kafka_errors.KafkaTimeoutError(),
    kafka_errors.Cancelled(),
    KeyboardInterrupt(),
]


def raised(exc: BaseException, *, writes: str | None, sent: bool) -> BaseException:
    with (
        pytest.raises(BaseException) as caught,
        translate_errors("change broker 1's config", "127.0.0.1:9092", writes=writes, sent=lambda: sent),
    ):
        raise exc
    return caught.value


@pytest.mark.parametrize("exc", LOST)
def test_a_write_sent_and_never_answered_is_outcome_unknown(exc):
    error = raised(exc, writes="brokers/1", sent=True)
    assert isinstance(error, KafkaAnswerLost) and isinstance(error, PartiallyWritten)
    assert error.exit_code == 8 and error.unknown == ["brokers/1"] and error.committed == []
    message = str(error)
    assert "was sent to Kafka (127.0.0.1:9092) and never answered" in message and "\n" not in message
    assert "may have been written" in message


@pytest.mark.parametrize("exc", LOST[:-1])
def test_a_write_that_never_left_is_unavailable_nothing_written(exc):
    error = raised(exc, writes="brokers/1", sent=False)
    assert isinstance(
        error, KafkaUnavailable if not isinstance(exc, kafka_errors.Cancelled) else BrokerRefused
    )
    assert error.exit_code in (1, 3)


@pytest.mark.parametrize("exc", LOST[:2])
def test_a_read_or_a_validation_is_never_outcome_unknown(exc):
    # a request that writes nothing (DescribeConfigs, validate_only) cannot have written anything
    assert isinstance(raised(exc, writes=None, sent=True), KafkaUnavailable)


def test_ctrl_c_before_sending_stays_ctrl_c():
    assert isinstance(raised(KeyboardInterrupt(), writes="brokers/1", sent=False), KeyboardInterrupt)
