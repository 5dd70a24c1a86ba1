#!/usr/bin/env python3
"""A small API behind a third-party Idempotency-Key middleware from PyPI, with
the fault proxy of fault_proxy.py in front: the servers the interop tests
(Tests/InteropTests) deliver to.

    .build/pyenv/bin/python Scripts/interop/interop_server.py \
        --middleware asgi-idempotency-header --rate 0.2 --fault close-before-answer

The API: `POST /messages` with a JSON body takes `--apply-seconds` to apply
(sleeping, as a slow database would), then records the write in its ledger —
the server's own record of what it applied: Idempotency-Key → the ids it
created — and answers 201 `{"id": "m<n>", ...}`.

Protocol, one JSON object per line:
- stdout, once ready: `{"event": "ready", "app": PORT, "proxy": PORT}`
  (`app` is the server itself, `proxy` the fault proxy in front of it);
- stdin `report` → stdout `{"event": "report", "applied": {key: [ids]},
  "proxy": {"requests": n, "faults": {name: n}}}`;
- stdin `quit`, or the end of stdin (the test died), stops everything.

Middlewares (see Scripts/interop/requirements.txt for the pinned versions):
- asgi-idempotency-header: Starlette, IdempotencyHeaderMiddleware with its
  MemoryBackend, served by uvicorn;
- fastapi-idempotency: Starlette, IdempotencyMiddleware with its MemoryStore
  and defaults, served by uvicorn;
- drf-idempotency: Django REST framework, drf_idempotency's middleware with
  its database backend (SQLite), served by Django's threaded WSGI server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_proxy import FaultProxy  # noqa: E402


class Ledger:
    """What the API applied: key → ids, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.applied: dict[str, list[str]] = {}
        self.count = 0

    def apply(self, key: str | None) -> str:
        with self.lock:
            self.count += 1
            server_id = f"m{self.count}"
            self.applied.setdefault(key or "", []).append(server_id)
            return server_id


LEDGER = Ledger()
APPLY_SECONDS = 0.2


def listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


# MARK: Starlette apps (uvicorn)

def starlette_app(middleware_name: str):
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def create_message(request: Request) -> JSONResponse:
        payload = await request.json()
        await asyncio.sleep(APPLY_SECONDS)
        server_id = LEDGER.apply(request.headers.get("idempotency-key"))
        return JSONResponse({"id": server_id, "text": payload.get("text")}, status_code=201)

    if middleware_name == "asgi-idempotency-header":
        from idempotency_header_middleware import IdempotencyHeaderMiddleware
        from idempotency_header_middleware.backends import MemoryBackend

        middleware = [Middleware(IdempotencyHeaderMiddleware, backend=MemoryBackend())]
    elif middleware_name == "fastapi-idempotency":
        from fastapi_idempotency import IdempotencyMiddleware

        middleware = [Middleware(IdempotencyMiddleware)]
    else:
        raise ValueError(middleware_name)
    return Starlette(routes=[Route("/messages", create_message, methods=["POST"])], middleware=middleware)


async def serve_uvicorn(app, sock: socket.socket):
    import uvicorn

    config = uvicorn.Config(app, log_level="error", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)

    async def stop() -> None:
        server.should_exit = True
        await task

    return sock.getsockname()[1], stop


# MARK: Django REST framework app (Django's threaded WSGI server)

def django_wsgi_app(database: str):
    import django
    from django.conf import settings

    settings.configure(
        DEBUG=False,
        SECRET_KEY="interop-tests-only",
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework", "drf_idempotency"],
        MIDDLEWARE=["drf_idempotency.middleware.IdempotencyMiddleware"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": database, "OPTIONS": {"timeout": 30}}},
        REST_FRAMEWORK={"DEFAULT_AUTHENTICATION_CLASSES": [], "DEFAULT_PERMISSION_CLASSES": [], "UNAUTHENTICATED_USER": None},
        USE_TZ=True,
        LOGGING_CONFIG=None,
    )
    django.setup()
    from django.core.management import call_command
    from django.urls import path
    from rest_framework.decorators import api_view
    from rest_framework.response import Response

    call_command("migrate", verbosity=0, interactive=False)

    @api_view(["POST"])
    def create_message(request):
        time.sleep(APPLY_SECONDS)
        server_id = LEDGER.apply(request.headers.get("Idempotency-Key"))
        return Response({"id": server_id, "text": request.data.get("text")}, status=201)

    globals()["urlpatterns"] = [path("messages", create_message)]
    from django.core.wsgi import get_wsgi_application

    return get_wsgi_application()


def serve_django(app):
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler)
    server.set_app(app)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="django-wsgi", daemon=True)
    thread.start()

    async def stop() -> None:
        await asyncio.get_running_loop().run_in_executor(None, server.shutdown)
        server.server_close()

    return server.server_address[1], stop


# MARK: Main

def emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message, sort_keys=True) + "\n")
    sys.stdout.flush()


async def main() -> None:
    global APPLY_SECONDS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--middleware", required=True, choices=["asgi-idempotency-header", "fastapi-idempotency", "drf-idempotency"])
    parser.add_argument("--apply-seconds", type=float, default=0.2, help="how long applying one write takes")
    parser.add_argument("--rate", type=float, default=0.0, help="share of requests that meet a fault, 0…1")
    parser.add_argument("--fault", default="close-before-answer", help="close-before-answer, close-mid-answer, rst-after-apply or mix")
    parser.add_argument("--drop-after", type=float, default=0.05, help="close-before-answer: seconds without an answer byte before the drop")
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    APPLY_SECONDS = arguments.apply_seconds

    scratch = tempfile.TemporaryDirectory(prefix="outbox-interop-")
    if arguments.middleware == "drf-idempotency":
        # Django's setup and migrations refuse to run on an event loop's thread.
        database = os.path.join(scratch.name, "db.sqlite3")
        wsgi = await asyncio.get_running_loop().run_in_executor(None, django_wsgi_app, database)
        app_port, stop_app = serve_django(wsgi)
    else:
        app_port, stop_app = await serve_uvicorn(starlette_app(arguments.middleware), listening_socket())
    proxy = FaultProxy(app_port, arguments.rate, arguments.fault, arguments.drop_after, arguments.seed)
    proxy_port = await proxy.start()
    emit({"event": "ready", "app": app_port, "proxy": proxy_port, "middleware": arguments.middleware})

    loop = asyncio.get_running_loop()
    try:
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            command = line.strip()
            if not line or command == "quit":
                break
            if command == "report":
                with LEDGER.lock:
                    applied = {key: list(ids) for key, ids in LEDGER.applied.items()}
                emit({"event": "report", "applied": applied, "proxy": proxy.report()})
            elif command:
                emit({"event": "error", "message": f"unknown command {command!r}"})
    finally:
        await proxy.stop()
        await stop_app()
        scratch.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
