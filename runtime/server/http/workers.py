"""Loading a `Server` named on a command line, and serving it from several worker processes.

    mcpgen serve mypkg.server:server --workers 4            # serve_workers: the multi-worker command

`serve_workers` binds one listening socket (TCP_NODELAY on every accepted connection: a small
response never waits for the client's delayed ACK) and runs uvicorn's supervisor over it; each
worker builds its own app (`worker_app`) on uvicorn's fastest installed stack. uvicorn's own
`--workers` socket leaves the protocol 0, so on asyncio its workers answer each response some 40 ms
late; `mcpgen serve --workers N` is the command to use.

`app_factory` builds one app per worker process from the environment, for other process managers
(`uvicorn --factory mcpgen.runtime.server.http.workers:app_factory`, gunicorn): `MCPGEN_SERVER`
(`path/to/file.py:attr` or `package.module:attr`, a `Server` or a function returning one),
`MCPGEN_PATH` (default `/mcp`), `MCPGEN_REDIS_URL` (a Redis change bus and task store shared by the
workers; a task store the server set itself is kept) and,
through the server, `MCPGEN_STATE_KEYS` (the `requestState` sealing keys every worker must share).
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import Server
from ..loading import StartedWhileLoading, loading

log = logging.getLogger("mcpgen.runtime.server.http")

if TYPE_CHECKING:
    from .app import HttpApp
    from .security import HttpSecurity

SERVER_ENV = "MCPGEN_SERVER"
PATH_ENV = "MCPGEN_PATH"
REDIS_ENV = "MCPGEN_REDIS_URL"


def load_server(target: str, *, notice: Callable[[str], None] = log.warning) -> Server:
    """The `Server` named by `FILE_OR_MODULE:ATTR` (ATTR may be a function returning one; default
    attribute: `server`). A module is imported from the current folder too, a file with its own
    folder on the path (as `python FILE` would). A module that starts serving when imported (a
    quick-start file ending in `server.run_stdio()`) stops there, and what it defined is used;
    `notice` is told so, with how to avoid it."""
    where, _, attr = target.partition(":")
    attr = attr or "server"
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = Path(where).resolve()
        if not path.is_file():
            raise LookupError(f"no such file: {where}")
        _on_path(str(path.parent))
        spec = importlib.util.spec_from_file_location(f"mcpgen_served_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise LookupError(f"cannot load {where}")
    else:
        _on_path(os.getcwd())
        spec = importlib.util.find_spec(where) if where not in sys.modules else None
        if spec is None and where not in sys.modules:
            raise ImportError(f"no module named {where!r} (looked in the current folder too)")
    module = sys.modules.get(where) if spec is None else _execute(spec, where, notice)
    found: Any = getattr(module, attr, None)
    if found is None:
        raise LookupError(f"{where} has no attribute {attr!r}")
    if not isinstance(found, Server) and callable(found):
        found = found()
    if not isinstance(found, Server):
        raise LookupError(f"{target} is a {type(found).__name__}, not an mcpgen Server")
    return found


def _on_path(folder: str) -> None:
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _execute(spec: importlib.machinery.ModuleSpec, where: str, notice: Callable[[str], None]) -> ModuleType:
    """Run the module of `spec` (registered first, so what it defined stays if it stops early)."""
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    with loading():
        try:
            spec.loader.exec_module(module)
        except StartedWhileLoading as started:
            notice(
                f"{where} starts serving when imported ({started.how}); serving what it defined before that. "
                'Put that call under `if __name__ == "__main__":` to import the file without it.'
            )
    return module


def worker_app(target: str, path: str = "/mcp", security: HttpSecurity | None = None) -> HttpApp:
    """The app of one worker process: the `Server` named by `target`, sharing its changes and tasks
    through Redis when `MCPGEN_REDIS_URL` is set (a task store the server set itself is kept)."""
    server = load_server(target)
    redis_url = os.environ.get(REDIS_ENV)
    if redis_url:
        from ..redis_bus import RedisBus
        from ..tasks import MemoryTaskStore
        from ..tasks.redis_store import RedisTaskStore

        server.bus = RedisBus(redis_url)
        if isinstance(server.tasks.store, MemoryTaskStore):  # the workers share their tasks (unless told otherwise)
            server.tasks.store = RedisTaskStore(redis_url)
    return server.http_app(path) if security is None else server.http_app(path, security=security)


def app_factory() -> HttpApp:
    """An app built from the environment (see the module docstring): one per worker process."""
    target = os.environ.get(SERVER_ENV)
    if not target:
        raise LookupError(f"set {SERVER_ENV}=FILE_OR_MODULE:ATTR to the Server to serve")
    return worker_app(target, os.environ.get(PATH_ENV, "/mcp"))


def serve_workers(  # noqa: PLR0913  (keyword-only settings)
    target: str,
    workers: int,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    security: HttpSecurity | None = None,
    log_level: str = "info",
    healthcheck_timeout: int = 30,
    access_log: bool = False,
) -> None:
    """Serve the `Server` named by `target` from `workers` processes until interrupted, with
    uvicorn's supervisor (it restarts a worker that dies, or one that does not answer its health
    check within `healthcheck_timeout` seconds: uvicorn's own 5 s replaces workers still starting
    on a loaded machine) on one socket bound here. Each worker
    imports `target` itself: handshake-era sessions live in the worker that opened them (modern
    requests are self-contained); set `MCPGEN_STATE_KEYS` so every worker reads the others'
    `requestState`, and `MCPGEN_REDIS_URL` for one change bus and task store. `access_log`
    logs a line per request."""
    from .run import bind, require_uvicorn

    require_uvicorn()
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from .protocols import http_protocol

    sock = bind(host, port)
    sock.set_inheritable(True)  # the workers accept on it
    config = uvicorn.Config(
        functools.partial(worker_app, target, path, security),  # pickled to each worker, called there
        factory=True,
        workers=workers,
        http=http_protocol(),
        lifespan="on",
        log_level=log_level,
        access_log=access_log,
        timeout_graceful_shutdown=30,
        timeout_worker_healthcheck=healthcheck_timeout,
    )
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
