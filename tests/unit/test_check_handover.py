"""Which notifications a check may hand over with reads its directory stat disagrees with
(``PendingCheck._no_gap``): only told ones that are every number after the last processed, so
none can be missing below them (issue 36 #1). Pure: no session is touched."""

from __future__ import annotations

import pytest

from configctl.zk.watchers import NotificationWatch, PendingCheck

PREFIX = "config_change_"


def check(after: int | None, told: list[int]) -> PendingCheck:
    watch = NotificationWatch(None, "/config/changes", PREFIX, on_change=lambda: None)  # type: ignore[arg-type]
    names = [watch.name_of(number) for number in sorted(told)]
    return PendingCheck(watch, after, True, None, None, [], names, [], None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("after", "told", "hand_over"),
    [
        (4, [5], True),
        (4, [5, 6, 7], True),
        (4, [6], False),  # 5 was never told: it may exist, and it comes first
        (4, [5, 7], False),  # 6 missing between them
        (4, [], False),  # nothing told: nothing to hand over
        (None, [0, 1], False),  # nothing processed yet: what came before is unknown
        (9, [10, 11], True),
    ],
)
def test_told_notifications_are_handed_over_only_without_a_gap(after, told, hand_over):
    assert check(after, told)._no_gap() is hand_over
