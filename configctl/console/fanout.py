"""Server-sent events to every open browser: one small message per moved document, bounded per client.

The hub (:mod:`.hub`) says on its own thread that a document moved; each subscriber (one
``/events`` stream) gets the message on the event loop, in a queue of at most ``limit``
messages. A browser that stops reading (a frozen tab, a dead network) fills its queue and is
cut off rather than holding memory: its ``EventSource`` reconnects by itself and the first
message of the new stream (``hello``, every document's version) brings it up to date. A browser
that goes away is dropped when its stream ends (Starlette ends it on disconnect).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Mapping

KEEPALIVE_S = 15.0
"""A comment line this often keeps proxies from closing an idle stream."""

QUEUE_LIMIT = 64


def message(event: str, data: Mapping[str, object]) -> str:
    """One server-sent event (``data`` is JSON, one line: no stored text can add a field)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class Subscriber:
    """One ``/events`` stream; lives on the event loop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.queue: deque[str] = deque()
        self.wake = asyncio.Event()
        self.overflowed = False
        self.ended = False

    def end(self) -> None:
        self.ended = True
        self.wake.set()

    def offer(self, text: str) -> None:
        if len(self.queue) >= self.limit:
            self.overflowed = True
        else:
            self.queue.append(text)
        self.wake.set()


class Fanout:
    """Every subscriber of one server; :meth:`publish` may be called from any thread."""

    def __init__(self, limit: int = QUEUE_LIMIT) -> None:
        self.limit = limit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribers: set[Subscriber] = set()
        self._lock = threading.Lock()
        self.dropped = 0
        """Streams cut off because their browser did not keep up."""
        self.closing = False

    def close(self) -> None:
        """End every stream now (the server is stopping: it must not wait for browsers to leave).
        Safe from any thread, a signal handler included."""
        self.closing = True
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            loop.call_soon_threadsafe(subscriber.end)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def publish(self, event: str, data: Mapping[str, object]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        text = message(event, data)
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            loop.call_soon_threadsafe(subscriber.offer, text)

    async def stream(self, hello: str) -> AsyncIterator[str]:
        """One browser's stream: ``hello`` first, then every message, a keep-alive when idle."""
        subscriber = Subscriber(self.limit)
        with self._lock:
            self._subscribers.add(subscriber)
        try:
            if self.closing:
                return
            yield hello
            while True:
                try:
                    await asyncio.wait_for(subscriber.wake.wait(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                subscriber.wake.clear()
                if subscriber.ended:
                    return
                if subscriber.overflowed:
                    self.dropped += 1
                    return
                while subscriber.queue:
                    yield subscriber.queue.popleft()
        finally:
            with self._lock:
                self._subscribers.discard(subscriber)
