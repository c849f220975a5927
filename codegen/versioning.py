"""Dated protocol versions as comparable keys: never compared as strings."""

from __future__ import annotations

import datetime
import re

_DATED = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def version_key(version: str) -> tuple[int, int, int] | None:
    """`"2025-11-25"` -> `(2025, 11, 25)`; anything that is not a real calendar date -> None."""
    match = _DATED.match(version) if isinstance(version, str) else None
    if not match:
        return None
    year, month, day = (int(g) for g in match.groups())
    try:
        datetime.date(year, month, day)
    except ValueError:
        return None
    return year, month, day


def sort_versions(versions: list[str]) -> list[str]:
    """Oldest first; every entry must be a dated version."""
    keyed = []
    for v in versions:
        key = version_key(v)
        if key is None:
            raise ValueError(f"{v!r} is not a dated protocol version (YYYY-MM-DD)")
        keyed.append((key, v))
    return [v for _, v in sorted(keyed)]


def module_name(version: str) -> str:
    """`2025-11-25` -> `v2025_11_25`."""
    return "v" + version.replace("-", "_")
