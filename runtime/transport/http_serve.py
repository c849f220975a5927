"""Deprecated: `mcpgen.runtime.transport.http_serve` moved; import from
`mcpgen.runtime.server.http.run`. Kept for one release."""

import warnings

from ..server.http.run import bind, run_http, serve_http
from ..server.http.workers import PATH_ENV, REDIS_ENV, SERVER_ENV, app_factory, load_server

warnings.warn(
    "mcpgen.runtime.transport.http_serve is deprecated; import from mcpgen.runtime.server.http.run",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["PATH_ENV", "REDIS_ENV", "SERVER_ENV", "app_factory", "bind", "load_server", "run_http", "serve_http"]
