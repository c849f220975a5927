"""Deprecated: `mcpgen.runtime.registry` moved; import from
`mcpgen.runtime (or mcpgen.runtime.protocol.tables)`. Kept for one release."""

import warnings

from .protocol.tables import Protocol, VersionRegistry

warnings.warn(
    "mcpgen.runtime.registry is deprecated; import from mcpgen.runtime (or mcpgen.runtime.protocol.tables)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["Protocol", "VersionRegistry"]
