"""The Admin API edge: what a Kafka client error means to configctl (its exit status and its kind)."""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest

from configctl.adminapi.errors import translate_errors
from configctl.errors import BrokerRefused, KafkaUnavailable, PermissionDenied

pytestmark = pytest.mark.unit


def raised(exc: BaseException) -> BaseException:
    with pytest.raises(Exception) as caught, translate_errors("describe broker 2", "127.0.0.1:9092"):
        raise exc
    return caught.value


def test_a_broker_missing_from_the_metadata_is_unavailable_not_a_refusal():
    # a stopped broker leaves the cluster's metadata: asking it must not read as "it refused"
    # (a sidecar would drop its question and count the broker as applied)
    error = raised(kafka_errors.UnknownBrokerIdError(2))
    assert isinstance(error, KafkaUnavailable) and error.exit_code == 3
    assert "broker 2 is not in the cluster's metadata" in str(error)


@pytest.mark.parametrize(
    "exc",
    [
        kafka_errors.KafkaConnectionError(),
        kafka_errors.NodeNotReadyError(2),
        kafka_errors.KafkaTimeoutError(),
    ],
)
def test_no_answer_is_unavailable(exc):
    assert isinstance(raised(exc), KafkaUnavailable)


def test_a_refusal_and_a_denial_keep_their_kinds():
    assert isinstance(raised(kafka_errors.InvalidRequestError("no")), BrokerRefused)
    assert isinstance(raised(kafka_errors.ClusterAuthorizationFailedError()), PermissionDenied)


def test_records_in_a_codec_the_client_lacks_are_the_machines_problem_not_a_refusal():
    from configctl.errors import EnvironmentProblem

    reading = translate_errors("read configctl's history from _configctl_history", "b:9092")
    with (
        pytest.raises(EnvironmentProblem, match=r"set compression.type=producer on that topic") as found,
        reading,
    ):
        raise kafka_errors.UnsupportedCodecError("Libraries for lz4 compression codec not found")
    assert found.value.exit_code == 7 and "\n" not in found.value.message
