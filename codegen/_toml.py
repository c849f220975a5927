"""`tomllib` on Python 3.11+, the `tomli` backport on 3.10."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

loads = tomllib.loads
TOMLDecodeError = tomllib.TOMLDecodeError

__all__ = ["TOMLDecodeError", "loads"]
