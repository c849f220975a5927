"""Deprecated: `mcpgen.runtime.capabilities` moved; import from
`mcpgen.runtime.protocol.capabilities`. Kept for one release."""

import warnings

from .protocol.capabilities import gate_allows, has_capability, merge_capabilities, missing_paths, required_capabilities

warnings.warn(
    "mcpgen.runtime.capabilities is deprecated; import from mcpgen.runtime.protocol.capabilities",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["gate_allows", "has_capability", "merge_capabilities", "missing_paths", "required_capabilities"]
