"""The tree watch's events replayed on a listing (``NotificationWatch._replay``): pure set work.

ZooKeeper never gives a sequential name twice, so an event already reflected in the listing it
is replayed on changes nothing; events that follow it are applied in order.
"""

from __future__ import annotations

from configctl.zk.treewatch import CREATED, DELETED
from configctl.zk.watchers import NotificationWatch

PREFIX = "config_change_"


def name(number: int) -> str:
    return f"{PREFIX}{number:010d}"


def watch_with(known: set[str], bad: set[str] | None = None) -> tuple[NotificationWatch, list[str]]:
    told_bad: list[str] = []
    watch = NotificationWatch(
        None,  # type: ignore[arg-type]  # replaying touches no session
        "/config/changes",
        PREFIX,
        on_change=lambda: None,
        on_bad_name=told_bad.append,
    )
    watch._known = set(known)
    watch._bad_names = set(bad or ())
    return watch, told_bad


def test_new_names_are_added_and_purged_ones_removed_in_order():
    watch, told_bad = watch_with({name(1), name(2)})
    watch._replay(
        [(CREATED, name(3)), (DELETED, name(1)), (CREATED, "lock"), (CREATED, name(4)), (DELETED, name(4))]
    )
    assert watch._known == {name(2), name(3)}
    assert watch._bad_names == {"lock"} and told_bad == ["lock"]


def test_events_already_in_the_listing_change_nothing():
    listing = {name(5), name(7)}
    watch, told_bad = watch_with(listing, {"lock"})
    # made before the listing (5, 7, lock) and purged before it (6): all reflected already
    watch._replay(
        [(CREATED, name(5)), (CREATED, name(6)), (DELETED, name(6)), (CREATED, name(7)), (CREATED, "lock")]
    )
    assert watch._known == listing and watch._bad_names == {"lock"}
    assert told_bad == []  # a bad name is told once, when first seen


def test_a_bad_name_deleted_is_no_longer_present():
    watch, _ = watch_with({name(1)}, {"lock"})
    watch._replay([(DELETED, "lock")])
    assert watch.present() == {name(1)}
