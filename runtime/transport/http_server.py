"""Deprecated: `mcpgen.runtime.transport.http_server` moved; import from
`mcpgen.runtime.server.http.app`. Kept for one release."""

import warnings

from ..auth.shared.principal import AUTH_SCOPE_KEY
from ..server.http.app import HttpApp, close_sse_stream

warnings.warn(
    "mcpgen.runtime.transport.http_server is deprecated; import from mcpgen.runtime.server.http.app",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["AUTH_SCOPE_KEY", "HttpApp", "close_sse_stream"]
