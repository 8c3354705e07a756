"""The console's Starlette app: JSON views, server-sent event streams and the built page.

Every view is computed by `broker.console.state` on the broker's loop; this module only maps
URLs to views and streams them. Read-only: GET only, no route changes broker state, except
`POST /api/controls/NAME`, which runs a test control and answers 404 unless the broker was
started with `--controls` too (the page then shows the controls as buttons).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable

import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from . import state
from .records import schema_decoder

log = logging.getLogger("kafkalite.console")

STATIC = Path(__file__).resolve().parent / "static"
# a stream re-reads its view at most this often (a busy partition wakes it on every append)
MIN_INTERVAL_S = 0.5
# ...and at least this often (ages, timeouts and group changes wake nothing)
POLL_INTERVAL_S = 0.5
# views that change when the coordinators write their logs: the stream also wakes on those appends
WATCHED_LOGS = {"transactions": "__transaction_state", "groups": "__consumer_offsets"}
# a comment line keeps proxies and the browser from giving up on a quiet stream
KEEPALIVE_S = 15.0


class NotFound(Exception):
    pass


def _int(value: str | None, what: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise NotFound(f"{what} must be an integer, not {value!r}") from None


def make_app(broker) -> Starlette:
    history = state.TransactionHistory()
    shared: dict[tuple, tuple[float, str]] = {}

    def partition_of(params: dict[str, Any]):
        index = _int(params.get("partition"), "partition")
        part = state.find_partition(broker, params.get("topic", ""), index if index is not None else -1)
        if part is None:
            raise NotFound(f"no partition {params.get('topic')}-{params.get('partition')}")
        return part

    def view_topics(_params) -> Any:
        return {"overview": state.overview(broker), "topics": state.topics(broker)}

    def view_partition(params) -> Any:
        part = partition_of(params)
        return state.timeline(broker, part, _int(params.get("from"), "from"))

    def view_transactions(_params) -> Any:
        return {"transactions": state.transactions(broker, history)}

    def view_groups(_params) -> Any:
        return {"groups": state.groups(broker)}

    views: dict[str, Callable[[dict], Any]] = {
        "topics": view_topics, "partition": view_partition,
        "transactions": view_transactions, "groups": view_groups,
    }

    def params_of(request: Request) -> dict[str, Any]:
        params = dict(request.query_params)
        params.update(request.path_params)
        return params

    def json_view(name: str):
        async def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(views[name](params_of(request)))
            except NotFound as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
        return endpoint

    async def records(request: Request) -> Response:
        params = params_of(request)
        try:
            part = partition_of(params)
            offset = _int(params.get("offset"), "offset")
        except NotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        try:
            found = state.batch_records(part, offset if offset is not None else 0, schema_decoder(broker))
        except (ValueError, RuntimeError) as exc:  # a codec that is not installed, a corrupt batch
            log.warning("cannot decode the batch at offset %s of %s-%s: %s", offset, part.topic.name, part.index, exc)
            return JSONResponse({"error": f"cannot decode the batch: {exc}"}, status_code=422)
        if found is None:
            return JSONResponse({"error": f"no batch holds offset {offset}"}, status_code=404)
        return JSONResponse(found)

    async def stream(request: Request) -> Response:
        name = request.path_params["view"]
        view = views.get(name)
        if view is None:
            return JSONResponse({"error": f"no view {name!r}"}, status_code=404)
        params = dict(request.query_params)
        try:
            first = view(params)
        except NotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        # the partitions whose appends may change this view: its own, or the coordinators' logs
        # (where every transaction and group change is written)
        if name == "partition":
            watched = lambda: [partition_of(params)]  # noqa: E731
        elif name in WATCHED_LOGS:
            watched = lambda: state.internal_partitions(broker, WATCHED_LOGS[name])  # noqa: E731
        else:
            watched = lambda: []  # noqa: E731
        key = (name, tuple(sorted(params.items())))

        def compute() -> str:
            # viewers of the same view share one computation per MIN_INTERVAL_S
            now = trio.current_time()
            hit = shared.get(key)
            if hit is not None and now - hit[0] < MIN_INTERVAL_S:
                return hit[1]
            text = json.dumps(view(params), separators=(",", ":"))
            shared[key] = (now, text)
            if len(shared) > 256:
                for k in [k for k, (t, _) in shared.items() if now - t > 10]:
                    del shared[k]
            return text

        # a partition changes only by its appends; the coordinators' state also changes without
        # one that wakes (a transaction's state record does not wake, its markers do)
        fallback = POLL_INTERVAL_S * (2 if name == "partition" else 1)
        return StreamingResponse(_events(json.dumps(first, separators=(",", ":")), compute, watched, fallback),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    # every endpoint is a coroutine: Starlette would run a plain function in a worker thread,
    # and broker state may only be read on the trio loop
    # the schema registry's view (broker.schema_registry.decoding.RegistryView) when it is served;
    # read through its methods, so the console imports nothing of the registry's package
    async def schemas(_request: Request) -> Response:
        view = getattr(broker, "schema_registry", None)
        if view is None:
            return JSONResponse({"enabled": False, "subjects": []})
        return JSONResponse(view.summary())

    async def overview(_request: Request) -> Response:
        return JSONResponse(state.overview(broker))

    async def index(_request: Request) -> Response:
        page = STATIC / "index.html"
        if not page.exists():
            return PlainTextResponse("the console's page is not built: run `npm run build` in broker/console/web",
                                     status_code=500)
        return FileResponse(page, headers={"Cache-Control": "no-store"})

    # with the controls endpoint on (broker.controls_url), the page also offers the controls as
    # buttons; these two routes are the only ones that change the broker, and only then exist
    async def controls_listing(_request: Request) -> Response:
        if not broker.controls_url:
            return JSONResponse({"enabled": False, "controls": []})
        from ..controls.http import describe

        return JSONResponse({"enabled": True, "url": broker.controls_url, "controls": describe()})

    async def controls_run(request: Request) -> Response:
        if not broker.controls_url:
            return JSONResponse({"error": "the broker runs without --controls"}, status_code=404)
        from ..controls.http import run

        return await run(broker, request.path_params["name"], await request.body())

    routes: list[BaseRoute] = [
        Route("/", index),
        Route("/api/overview", overview),
        Route("/api/topics", json_view("topics")),
        Route("/api/partition/{topic}/{partition}", json_view("partition")),
        Route("/api/records/{topic}/{partition}/{offset}", records),
        Route("/api/transactions", json_view("transactions")),
        Route("/api/groups", json_view("groups")),
        Route("/api/stream/{view}", stream),
        Route("/api/schemas", schemas),
        Route("/api/controls", controls_listing),
        Route("/api/controls/{name}", controls_run, methods=["POST"]),
    ]
    if (STATIC / "assets").is_dir():
        routes.append(Mount("/assets", app=StaticFiles(directory=STATIC / "assets"), name="assets"))
    return Starlette(routes=routes)


async def _events(first: str, compute: Callable[[], str], watched: Callable[[], list], fallback: float):
    """Server-sent events: the view now, then again whenever it changes: looked at again when
    one of the `watched` partitions is appended to, and at least every `fallback` seconds."""
    last = first
    yield f"data: {last}\n\n"
    quiet = 0.0
    while True:
        started = trio.current_time()
        try:
            parts = watched()
        except NotFound as exc:
            yield f"event: gone\ndata: {json.dumps(str(exc))}\n\n"
            return
        woke = trio.Event()
        for part in parts:
            state.watch_partition(part, woke)
        try:
            with trio.move_on_after(fallback):
                await woke.wait()
        finally:
            for part in parts:
                state.unwatch_partition(part, woke)
        # a busy partition wakes us on every append: look at most every MIN_INTERVAL_S
        rest = MIN_INTERVAL_S - (trio.current_time() - started)
        if rest > 0:
            await trio.sleep(rest)
        try:
            now = compute()
        except NotFound as exc:
            yield f"event: gone\ndata: {json.dumps(str(exc))}\n\n"
            return
        quiet += trio.current_time() - started
        if now != last:
            last = now
            quiet = 0.0
            yield f"data: {now}\n\n"
        elif quiet >= KEEPALIVE_S:
            quiet = 0.0
            yield ": keep-alive\n\n"
