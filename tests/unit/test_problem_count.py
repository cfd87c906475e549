"""A refusal counts every problem it found, even when it lists only some (issue 36 #12).

``plan -f`` on a file with 10,000 bad keys said "101 problems": the count was taken from the
shortened list (the first 100 and a "... and N more" line) instead of from the problems found.
"""

from __future__ import annotations

import pytest

from configctl.desired import document as desired
from configctl.desired import plan
from configctl.errors import ValidationFailed

pytestmark = pytest.mark.unit


def test_ten_thousand_bad_keys_are_ten_thousand_problems():
    text = "topics:\n  orders:\n" + "".join(f"    bad.key.{i}: 1\n" for i in range(10_000))
    with pytest.raises(ValidationFailed) as caught:
        desired.parse(text, source="f.yaml")
    message = str(caught.value)
    assert message.startswith("10000 problems: f.yaml:3: topics/orders: unknown topic config 'bad.key.0'")
    assert message.endswith("; ... and 9900 more") and "\n" not in message
    assert len(caught.value.problems) == 10_000


@pytest.mark.parametrize(("found", "listed"), [(1, 1), (2, 2), (100, 100), (101, 100), (5000, 100)])
def test_the_count_is_what_was_found_and_the_list_is_bounded(found, listed):
    problems = [f"problem {i}" for i in range(found)]
    error = ValidationFailed(problems)
    message = str(error)
    assert error.problems == problems
    if found == 1:
        assert message == "invalid config: problem 0"
    else:
        assert message.startswith(f"{found} problems: problem 0; ")
    assert message.count("problem ") == listed
    assert ("more" in message) == (found > listed)


def test_plan_counts_the_secrets_it_cannot_resolve():
    """plan's own problems (a broker password in plain text, no encoder secret) are counted too;
    they were joined into one unbounded line without a count."""
    brokers = ", ".join(f"'{i}': {{listener.name.internal.ssl.key.password: pw}}" for i in range(150))
    state = desired.parse(f"brokers: {{{brokers}}}", source="f.yaml")
    with pytest.raises(ValidationFailed) as caught:
        plan.compute_plan(state, [], encoder=None)
    message = str(caught.value)
    assert message.startswith("150 problems: f.yaml: brokers/0: listener.name.internal.ssl.key.password")
    assert message.endswith("; ... and 50 more") and len(caught.value.problems) == 150
