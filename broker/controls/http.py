"""The controls endpoint: every control of `broker.controls` over HTTP/JSON, served by the broker
process (`kafkalite --controls [HOST:]PORT`), so that tests in any language can reach them.

    GET  /controls          {"controls": [{"name", "parameters": {NAME: {"required": bool,
                            "default": VALUE, "type": JSON TYPE or null}}, "doc"}, ...]}
                            (the table the Go and Node clients are generated from:
                            kafkalite.controls_codegen)
    POST /controls/NAME     body: a JSON object of arguments (empty body: none)
                            200 {"result": ...}; 400 {"error": text} when the control is unknown
                            or refuses its arguments; 408/409 {"error": text, "state": ...} when
                            a control that waits finds its condition unmet; 500 {"error": text} (and a log line with the
                            traceback) when the control itself fails.

Like the console, this is Starlette on hypercorn's trio worker (broker.http_endpoint), on the
broker's own trio loop, so a control runs among the broker's tasks with no locking. It has its
own server even when the console is on: the console is read-only and may be published to people who browse it, while a
control changes what the broker does; separate addresses let a deployment expose one without the
other. This module is imported only when the endpoint is asked for.
"""

from __future__ import annotations

import inspect
import json
import logging
from typing import Any

import trio

from ..http_endpoint import Guard, serve_app
from . import ControlError, ControlUnmet, invoke, load_all

log = logging.getLogger("kafkalite.controls")


def describe() -> list[dict[str, Any]]:
    out = []
    for ctl in sorted(load_all().values(), key=lambda c: c.name):
        params: dict[str, Any] = {}
        for name, default in ctl.parameters.items():
            if default is inspect.Parameter.empty:
                params[name] = {"required": True, "type": ctl.types[name]}
            else:
                params[name] = {"required": False, "default": default, "type": ctl.types[name]}
        out.append({"name": ctl.name, "parameters": params, "doc": ctl.doc})
    return out


async def run(broker, name: str, body: bytes):
    """POST /controls/NAME: the JSON response for running control `name` with the JSON `body`
    (the console's buttons run controls through this too)."""
    from starlette.responses import JSONResponse

    try:
        arguments = json.loads(body) if body.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        return JSONResponse({"error": f"the body is not JSON: {exc}"}, status_code=400)
    if not isinstance(arguments, dict):
        return JSONResponse({"error": "the body must be a JSON object of arguments"}, status_code=400)
    try:
        result = await invoke(broker, name, arguments)
    except ControlError as exc:
        log.info("control %s%s refused: %s", name, arguments, exc)
        return JSONResponse({"error": str(exc)}, status_code=400)
    except ControlUnmet as exc:
        log.info("control %s%s unmet: %s", name, arguments, exc.error)
        return JSONResponse({"error": exc.error, "state": exc.state}, status_code=exc.status)
    except Exception as exc:  # noqa: BLE001 - the caller gets the text, the log the traceback
        log.exception("control %s%s failed", name, arguments)
        return JSONResponse({"error": f"control {name!r} failed: {type(exc).__name__}: {exc}"},
                            status_code=500)
    try:
        response = JSONResponse({"result": result})
    except (TypeError, ValueError) as exc:
        log.error("control %s returned a result that is not JSON: %r", name, result)
        return JSONResponse({"error": f"control {name!r} returned no JSON: {exc}"}, status_code=500)
    log.info("control %s%s -> %s", name, arguments, result)
    return response


def make_app(broker):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def listing(_request: Request) -> Response:
        return JSONResponse({"controls": describe()})

    async def call(request: Request) -> Response:
        return await run(broker, request.path_params["name"], await request.body())

    async def not_found(request: Request, _exc: Exception) -> Response:
        return JSONResponse({"error": f"no such endpoint {request.method} {request.url.path}; "
                                      "GET /controls lists the controls, POST /controls/NAME runs one"},
                            status_code=404)

    async def wrong_method(request: Request, _exc: Exception) -> Response:
        return JSONResponse({"error": f"{request.method} is not allowed on {request.url.path}"},
                            status_code=405)

    routes = [
        Route("/", listing, methods=["GET"]),
        Route("/controls", listing, methods=["GET"]),
        Route("/controls/{name}", call, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: wrong_method})


async def serve_controls(broker, host: str, port: int, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve the endpoint until cancelled; reports (host, bound port) through task_status."""
    load_all()  # a control module that fails to import stops the start, not the first call
    # every path needs the token (when one is set): the listing too, which maps what can be changed
    await serve_app(lambda: make_app(broker), host, port, "kafkalite.controls.http",
                    Guard(broker.http_access, host, token_prefix="/"), task_status=task_status)
