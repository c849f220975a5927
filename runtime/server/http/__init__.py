"""Streamable HTTP, the server side: a `Server` as a plain ASGI 3 application serving both eras.

`app.HttpApp` (what `Server.http_app()` builds) routes each request: `modern` serves the
self-contained requests of the modern era (one POST, one request), `sessions` the handshake era's
sessions (with resumable SSE `streams` and their `events`), behind `security` (Host/Origin,
limits); `asgi` writes HTTP responses; `run` serves the app (uvicorn on asyncio, hypercorn on trio,
and `workers` builds one app per worker process (`uvicorn --workers N --factory
mcpgen.runtime.server.http.workers:app_factory`).
"""
