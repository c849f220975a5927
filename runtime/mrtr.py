"""Deprecated: `mcpgen.runtime.mrtr` moved; import from
`mcpgen.runtime (or mcpgen.runtime.protocol.input_requests)`. Kept for one release."""

import warnings

from .protocol.input_requests import InputRequest, InputRequired, elicit, elicit_url, list_roots, sample

warnings.warn(
    "mcpgen.runtime.mrtr is deprecated; import from mcpgen.runtime (or mcpgen.runtime.protocol.input_requests)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["InputRequest", "InputRequired", "elicit", "elicit_url", "list_roots", "sample"]
