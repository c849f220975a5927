"""Serving the Streamable HTTP app: uvicorn (asyncio), hypercorn (trio).

    run_http(server.http_app(), host="127.0.0.1", port=8000)      # blocking, uvicorn
    await serve_http(app, sockets=[sock])                          # inside a running event loop

`serve_http` picks the ASGI server by the running backend: uvicorn on asyncio, hypercorn on
trio. Both end open `subscriptions/listen` streams gracefully (each gets its result) before they
wait for open responses to finish, so a shutdown does not hang on long-lived streams. Several
worker processes each build their app with `workers.app_factory`.

uvicorn runs its fastest stack that is installed: httptools and uvloop (the `http` extra installs
them where they have wheels), else h11 and asyncio. uvicorn bounds the time between requests on a
connection but not the time a request's head may take to arrive, so the runner gives it
`HttpSecurity.header_timeout` (`protocols`): a connection whose next request head is not complete
in time is closed (slowloris); hypercorn's keep-alive timeout, which runs until each request's
head has come, is set to it. The app bounds the body itself (`body_timeout`).

No line is logged per request unless `access_log` is set (uvicorn's access log, hypercorn's to
standard output): writing one per request cut the rate of short calls by a third or more in the
benchmarks (`docs/explanation/project.md`), and neither gunicorn nor hypercorn log them by default.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from .app import HttpApp


def running_on_trio() -> bool:
    """Is the calling task run by trio? (anyio gives no public answer; trio is only ever running
    when it has been imported, so this asks trio itself and needs no other package.)"""
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return False
    except AttributeError:  # another thread is importing trio (httpcore does): so trio runs nowhere yet
        return False
    return True


def require_uvicorn() -> None:
    """Raise a one-line ImportError naming the extra when the HTTP server is not installed."""
    try:
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ImportError("serving HTTP needs uvicorn: pip install 'mcpgen[http]'") from exc


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket (port 0: a free port; read it from `getsockname()`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # listening socket says it is TCP; without it every small response waits for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


async def serve_http(  # noqa: PLR0913  (keyword-only settings)
    app: HttpApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    sockets: Sequence[socket.socket] | None = None,
    shutdown: anyio.Event | None = None,
    log_level: str = "warning",
    access_log: bool = False,
) -> None:
    """Serve `app` until `shutdown` is set (or the task is cancelled): uvicorn on asyncio,
    hypercorn on trio. Pass bound `sockets` to know the port before the server starts;
    `access_log` logs a line per request."""
    if sockets is None:
        sockets = [bind(host, port)]
    stop = shutdown or anyio.Event()
    if running_on_trio():
        await _serve_hypercorn(app, sockets, stop, log_level, access_log)
    else:
        await _serve_uvicorn(app, sockets, stop, log_level, access_log)


async def _serve_uvicorn(
    app: HttpApp, sockets: Sequence[socket.socket], stop: anyio.Event, log_level: str, access_log: bool
) -> None:
    require_uvicorn()
    import uvicorn

    from .protocols import http_protocol

    class Graceful(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            app.close_streams()
            await super().shutdown(sockets)

    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=access_log,
        lifespan="on",
        timeout_graceful_shutdown=30,
        http=http_protocol(),
    )
    server = Graceful(config)
    async with anyio.create_task_group() as tg:

        async def stopper() -> None:
            await stop.wait()
            server.should_exit = True

        tg.start_soon(stopper)
        try:
            await server.serve(sockets=list(sockets))
        finally:
            tg.cancel_scope.cancel()


async def _serve_hypercorn(
    app: HttpApp, sockets: Sequence[socket.socket], stop: anyio.Event, log_level: str, access_log: bool
) -> None:
    try:
        from hypercorn.config import Config
    except ImportError as exc:
        raise ImportError("serving HTTP on trio needs hypercorn: pip install 'mcpgen[trio]'") from exc
    from hypercorn.trio import serve

    config = Config()
    config.bind = [f"fd://{os.dup(sock.fileno())}" for sock in sockets]  # hypercorn closes what it is given
    config.loglevel = log_level.upper()
    if access_log:
        config.accesslog = "-"  # (standard output; hypercorn logs none by default)
    config.graceful_timeout = 30
    config.keep_alive_timeout = app.security.header_timeout  # hypercorn runs it until each request's head came

    async def trigger() -> None:
        await stop.wait()
        app.close_streams()

    await serve(app, config, shutdown_trigger=trigger)  # type: ignore[arg-type]


def endpoint_url(host: str, port: int, path: str | None) -> str:
    """The URL clients use for the endpoint served at `host:port` (its path included)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}{path or '/'}"


def run_http(
    app: HttpApp, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info", access_log: bool = False
) -> None:
    """Serve `app` with uvicorn until interrupted (Ctrl-C): the blocking one-liner, on uvicorn's
    fastest installed stack (its "auto" event loop: uvloop when installed); `access_log` logs a
    line per request.
    Logs the endpoint's URL, path included, once serving; returns after a graceful shutdown (an
    interruption ends serving, it is not an error)."""
    require_uvicorn()
    import logging

    import uvicorn

    from .protocols import http_protocol

    class Graceful(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                logging.getLogger("uvicorn.error").info("MCP endpoint at %s", endpoint_url(host, port, app.path))

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            app.close_streams()
            await super().shutdown(sockets)

    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, access_log=access_log, lifespan="on", http=http_protocol()
    )
    try:
        Graceful(config).run()
    except KeyboardInterrupt:  # uvicorn shut down gracefully, then passed the Ctrl-C on
        return
