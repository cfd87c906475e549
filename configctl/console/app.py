"""The console's Starlette application: pages, ``/api``, ``/events`` and the static files.

Pages and documents the whole fleet shares (status, newest changes, rollouts) are answered from
the hub (:mod:`.hub`) without touching ZooKeeper. What one page asks of its own (an entity, a
rollout's plan) is read once per moment and shared: concurrent browsers asking the same thing
wait for one read (:class:`Shared`), and the answer is kept until a document it depends on moves.
Those reads run on threads of their own, bounded (:class:`StoreWork`), so a slow or lost
ZooKeeper never makes the hub's pages wait; while the hub knows the connection is lost, an
entity is refused at once (503) instead of waiting for ZooKeeper. On a store without watches
(KRaft) each such read goes through a store opened for it (:meth:`WatchHub.reading`) and is kept
for one poll at most; the Rollouts page and ``/api/rollouts`` answer 404 with the one line
saying why (:attr:`WatchHub.no_rollouts`).

The one state-changing route, ``POST /api/rollouts/{id}/abort``, exists only in name unless
``serve --allow-actions`` handed over :class:`~.actions.Actions`: it passes the
:class:`~.security.ActionGate` first, and answers with the CLI's document and exit status.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from configctl.console import documents, views
from configctl.console.actions import Actions, check_reason
from configctl.console.fanout import Fanout, message
from configctl.console.hub import WatchHub
from configctl.console.security import ActionGate, Guard, Refused
from configctl.errors import (
    ConfigctlError,
    InvalidInput,
    NotFound,
    PermissionDenied,
    one_line,
    printable,
)
from configctl.store import CHANGES, ROLLOUTS, STATUS, ConfigStore

log = logging.getLogger(__name__)

DETAILED_ROLLOUTS = 10
"""Rollouts whose plan and events the Rollouts page shows: the open ones, then the newest."""

ACTION_BODY_LIMIT = 16 * 1024
"""An action's JSON is a reason; a larger body is refused before it is read whole."""

STORE_THREADS = 8
"""Reads of the store on a request's behalf (an entity, a rollout's plan, an action) at once."""

STORE_WAITING = 64
"""Such reads let in at most (running and queued); the next is refused at once with a 503."""


class Shared:
    """Answers kept while their key holds, each computed once even when asked for concurrently."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._done: OrderedDict[Hashable, Any] = OrderedDict()
        self._running: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()
        self.computed = 0

    def known(self, key: Hashable) -> Any:
        """The answer kept for ``key``, or None: nothing is computed."""
        with self._lock:
            return self._done.get(key)

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        while True:
            with self._lock:
                if key in self._done:
                    self._done.move_to_end(key)
                    return self._done[key]
                running = self._running.get(key)
                if running is None:
                    running = self._running[key] = threading.Event()
                    break
            running.wait()  # someone else reads it; take their answer (or try again if it failed)
        try:
            value = compute()
            with self._lock:
                self.computed += 1
                self._done[key] = value
                while len(self._done) > self.size:
                    self._done.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._running[key]
            running.set()


class StoreWork:
    """The threads that read the store on a request's behalf, apart from the pool the pages made
    from the hub's documents are rendered on: a lost ZooKeeper once filled that shared pool with
    entity reads, and the fleet page waited 48 s behind them. At most ``threads`` run and
    ``limit`` are let in; the next is refused at once (503) rather than queued without end."""

    def __init__(self, threads: int = STORE_THREADS, limit: int = STORE_WAITING) -> None:
        self.limit = limit
        self.waiting = 0
        self.refused = 0
        self._threads = ThreadPoolExecutor(threads, thread_name_prefix="configctl-console-store")

    async def run(self, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)`` on one of the threads (only the event loop counts, so no lock)."""
        if self.waiting >= self.limit:
            self.refused += 1
            raise ConfigctlError(
                f"the console is busy: {self.waiting} reads of the store are waiting already; try again"
            )
        self.waiting += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._threads, functools.partial(call, *args)
            )
        finally:
            self.waiting -= 1

    def close(self) -> None:
        """Stop taking work; a read under way ends with the store's session."""
        self._threads.shutdown(wait=False, cancel_futures=True)

    def stats(self) -> dict[str, int]:
        return {"waiting": self.waiting, "refused": self.refused}


def _status_of(exc: ConfigctlError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, InvalidInput):
        return 400
    if isinstance(exc, PermissionDenied):
        return 403
    return 503


def create_app(
    store: ConfigStore,
    hub: WatchHub,
    fanout: Fanout,
    *,
    token: str | None,
    loopback_only: bool,
    audit: documents.AuditFile | None,
    actions: Actions | None = None,
) -> Starlette:
    """The console, reading through ``store`` (opened by the caller) and ``hub`` (started);
    ``actions`` (``serve --allow-actions``, which also requires ``token``) may write."""
    shared = Shared()
    store_work = StoreWork()
    gate = ActionGate(token, enabled=actions is not None)

    def problem() -> str | None:
        return hub.problem

    def failure(request: Request, exc: ConfigctlError) -> Response:
        status = _status_of(exc)
        text = one_line(exc.message, 500)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": text}, status_code=status)
        return HTMLResponse(views.error_page(status, text, no_rollouts=hub.no_rollouts), status_code=status)

    def require_store() -> None:
        """Refuse at once (503, naming why) while the hub knows its store is lost."""
        lost = hub.unavailable()
        if lost is not None:
            raise lost

    def shared_document(topic: str) -> Any:
        require_store()
        return hub.document(topic)

    # -- the fleet --------------------------------------------------------------------------------

    def versions() -> dict[str, int]:
        """Read before the documents: a page made from newer ones only refreshes once more."""
        return dict(zip((STATUS, CHANGES, ROLLOUTS), hub.version_key(), strict=True))

    def fleet_html() -> str:
        seen = versions()
        return views.fleet_page(
            hub.document(STATUS),
            hub.document(CHANGES),
            hub.document(ROLLOUTS),
            problem(),
            seen,
            source=hub.source,
            no_rollouts=hub.no_rollouts,
            poll=hub.poll,
            gone=hub.gone(),
            stale=dict(hub.stale),
        )

    async def fleet_page(request: Request) -> Response:
        # made once per moment: twenty browsers refreshing after one change share one rendering
        key = ("fleet", hub.version_key(), problem())
        return HTMLResponse(await run_in_threadpool(shared.get, key, fleet_html))

    async def api_status(request: Request) -> Response:
        try:
            return JSONResponse(shared_document(STATUS))
        except ConfigctlError as exc:
            return failure(request, exc)

    async def api_rollouts(request: Request) -> Response:
        try:
            if hub.no_rollouts is not None:
                raise NotFound(hub.no_rollouts)
            return JSONResponse(shared_document(ROLLOUTS))
        except ConfigctlError as exc:
            return failure(request, exc)

    # -- an entity --------------------------------------------------------------------------------

    def entity(request: Request) -> documents.EntityDocument:
        require_store()  # again: it may have been lost while this read waited for a thread
        path = request.path_params["path"]
        broker = request.query_params.get("broker")
        only = None
        if broker is not None:
            if not broker.isdigit():
                raise InvalidInput("?broker= must be a broker id (a non-negative integer)")
            only = int(broker)
        found = documents.parse_entity(path)
        key = ("entity", found.path, only, hub.moment())

        def read() -> documents.EntityDocument:
            with hub.reading() as reading:
                return documents.entity_document(reading, found, hub.changes, only_broker=only)

        return shared.get(key, read)

    async def entity_page(request: Request) -> Response:
        seen = versions()
        try:
            require_store()
            document = await store_work.run(entity, request)
        except ConfigctlError as exc:
            return failure(request, exc)
        return HTMLResponse(
            views.entity_page(document, problem(), seen, source=hub.source, no_rollouts=hub.no_rollouts)
        )

    async def api_entity(request: Request) -> Response:
        try:
            require_store()
            document = await store_work.run(entity, request)
        except ConfigctlError as exc:
            return failure(request, exc)
        return JSONResponse(document.to_json())

    # -- rollouts ---------------------------------------------------------------------------------

    def rollout_details(listing: list[dict[str, Any]]) -> dict[str, Any]:
        readable = [r for r in listing if not r.get("problem")]
        chosen = [r for r in readable if r.get("open")] + [r for r in readable if not r.get("open")]
        details = {}
        with hub.reading() as reading:
            for item in chosen[:DETAILED_ROLLOUTS]:
                try:
                    detail = documents.rollout_detail(reading, item["id"])
                    if item.get("open"):
                        detail["brokers_now"] = documents.rollout_brokers(reading, detail, hub.changes)
                    details[item["id"]] = detail
                except ConfigctlError:
                    continue  # ended or unreadable meanwhile: the list says what it can
        return details

    async def rollouts_page(request: Request) -> Response:
        if hub.no_rollouts is not None:
            return failure(request, NotFound(hub.no_rollouts))
        seen = versions()
        listing = hub.document(ROLLOUTS)
        key = ("rollouts", hub.moment())  # the brokers' progress moves it too
        details = shared.known(key)
        if details is None and hub.problem is None:
            try:
                details = await store_work.run(shared.get, key, lambda: rollout_details(listing))
            except ConfigctlError:
                details = None  # busy: the list says what it can, the next refresh the rest
        return HTMLResponse(
            views.rollouts_page(listing, details or {}, problem(), seen, actions=gate.enabled)
        )

    # -- actions ----------------------------------------------------------------------------------

    def refused(request: Request, why: Refused) -> Response:
        """Every refused action is logged: someone tried to change the fleet through the console."""
        client = request.client.host if request.client else "?"
        log.warning(
            "console: refused %s %s from %s: %d %s",
            request.method,
            printable(request.url.path),
            client,
            why.status,
            printable(why.text),
        )
        return JSONResponse({"error": why.text}, status_code=why.status, headers=why.headers)

    async def action_body(request: Request) -> dict[str, Any] | Refused:
        """The request's JSON object, read no further than :data:`ACTION_BODY_LIMIT`."""
        too_large = Refused(413, f"the request body is larger than {ACTION_BODY_LIMIT} bytes")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > ACTION_BODY_LIMIT:
            return too_large
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > ACTION_BODY_LIMIT:
                return too_large
        try:
            given = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise InvalidInput("the request body is not JSON") from None
        if not isinstance(given, dict):
            raise InvalidInput('the request body must be a JSON object: {"reason": "why"}')
        unknown = sorted(set(given) - {"reason"})
        if unknown:
            raise InvalidInput(
                f"unknown field(s) {', '.join(map(repr, unknown))[:200]}: an abort takes a reason only "
                "(--force stays with the CLI: configctl rollout abort --force ID)"
            )
        return given

    async def abort_rollout(request: Request) -> Response:
        why = gate.check(request.headers)
        if why is not None or actions is None:
            return refused(request, why or Refused(403, "actions are off"))
        try:
            given = await action_body(request)
            if isinstance(given, Refused):
                return refused(request, given)
            reason = check_reason(given.get("reason"))
        except ConfigctlError as exc:
            return refused(request, Refused(400, one_line(exc.message, 500)))
        client = request.client.host if request.client else ""
        try:
            done = await store_work.run(
                functools.partial(actions.abort, client=client), request.path_params["rollout_id"], reason
            )
        except ConfigctlError as exc:  # busy
            return refused(request, Refused(503, one_line(exc.message, 500)))
        return JSONResponse(done.to_json(), status_code=done.http_status)

    # -- drift ------------------------------------------------------------------------------------

    def audit_document() -> Any:
        if audit is None:
            raise NotFound("no audit JSON was given (configctl serve --audit-json FILE)")
        return audit.document()

    async def drift_page(request: Request) -> Response:
        try:
            document = await run_in_threadpool(audit_document)
        except NotFound as exc:
            return HTMLResponse(
                views.drift_page(None, one_line(exc.message, 500), no_rollouts=hub.no_rollouts)
            )
        except ConfigctlError as exc:
            return failure(request, exc)
        status = hub.document(STATUS) if hub.problem is None else None  # says why a broker is stale
        return HTMLResponse(views.drift_page(document, None, status, no_rollouts=hub.no_rollouts))

    async def api_drift(request: Request) -> Response:
        try:
            return JSONResponse(await run_in_threadpool(audit_document))
        except ConfigctlError as exc:
            return failure(request, exc)

    # -- live -------------------------------------------------------------------------------------

    async def events(request: Request) -> Response:
        hello = message(
            "hello", {"versions": dict(zip((STATUS, CHANGES, ROLLOUTS), hub.version_key(), strict=True))}
        )
        return StreamingResponse(
            fanout.stream(hello),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"},
        )

    async def api_console(request: Request) -> Response:
        """What the console itself holds: its ZooKeeper watches (or how often it polls), browsers, refreshes."""
        return JSONResponse(
            {
                **hub.stats(),
                "subscribers": fanout.count,
                "dropped": fanout.dropped,
                "shared_reads": shared.computed,
                "store_reads": store_work.stats(),
            }
        )

    async def not_found(request: Request, exc: Exception) -> Response:
        return failure(request, NotFound(f"nothing at {request.url.path}"))

    async def crashed(request: Request, exc: Exception) -> Response:
        """A bug: logged whole for the operator; the browser gets one line."""
        log.error("console: %s failed", request.url.path, exc_info=exc)
        text = "the console failed to answer (its log has the details)"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": text}, status_code=500)
        return HTMLResponse(views.error_page(500, text, no_rollouts=hub.no_rollouts), status_code=500)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        fanout.attach(asyncio.get_running_loop())
        try:
            yield
        finally:
            store_work.close()

    routes = [
        Route("/", fleet_page),
        Route("/entity/{path:path}", entity_page),
        Route("/rollouts", rollouts_page),
        Route("/drift", drift_page),
        Route("/api/status", api_status),
        Route("/api/entity/{path:path}", api_entity),
        Route("/api/rollouts", api_rollouts),
        Route("/api/rollouts/{rollout_id}/abort", abort_rollout, methods=["POST"]),
        Route("/api/drift", api_drift),
        Route("/api/console", api_console),
        Route("/events", events),
        Mount("/static", StaticFiles(packages=[("configctl.console", "static")]), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token, loopback_only=loopback_only, actions=gate.enabled)],
        exception_handlers={404: not_found, Exception: crashed},
        lifespan=lifespan,
    )
