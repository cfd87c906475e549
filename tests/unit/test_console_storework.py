"""The console's reads of the store on a request's behalf (issue 36): on threads of their own,
bounded, the rest refused at once, so a lost ZooKeeper never holds the threads the hub's pages
are rendered on."""

from __future__ import annotations

import asyncio
import threading

import pytest

from configctl.console.app import Shared, StoreWork
from configctl.errors import ConfigctlError


def test_beyond_the_limit_a_read_is_refused_at_once_not_queued():
    release = threading.Event()
    threads: set[str] = set()

    def read(n: int) -> int:
        threads.add(threading.current_thread().name)
        release.wait(10)
        return n

    async def main() -> tuple[list[object], dict[str, int]]:
        work = StoreWork(threads=2, limit=3)
        try:
            asked = [asyncio.ensure_future(work.run(read, n)) for n in range(5)]
            await asyncio.sleep(0.2)
            refused = [a for a in asked if a.done()]
            assert len(refused) == 2 and all(isinstance(a.exception(), ConfigctlError) for a in refused)
            assert "busy" in str(refused[0].exception())
            assert work.stats() == {"waiting": 3, "refused": 2}
            release.set()
            done = await asyncio.gather(*asked, return_exceptions=True)
            return done, work.stats()
        finally:
            work.close()

    done, stats = asyncio.run(main())
    assert done[:3] == [0, 1, 2]
    assert stats == {"waiting": 0, "refused": 2}
    assert len(threads) == 2 and all(name.startswith("configctl-console-store") for name in threads)


def test_a_failed_read_frees_its_place():
    def fail() -> None:
        raise ConfigctlError("ZooKeeper: lost")

    async def main() -> StoreWork:
        work = StoreWork(threads=1, limit=1)
        for _ in range(3):
            with pytest.raises(ConfigctlError, match="lost"):
                await work.run(fail)
        work.close()
        return work

    assert asyncio.run(main()).stats() == {"waiting": 0, "refused": 0}


def test_shared_knows_only_what_it_computed():
    shared = Shared()
    assert shared.known("a") is None
    assert shared.get("a", lambda: {"x": 1}) == {"x": 1}
    assert shared.known("a") == {"x": 1} and shared.computed == 1
