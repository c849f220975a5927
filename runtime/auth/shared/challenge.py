"""`WWW-Authenticate` challenges (RFC 9110 §11.6.1): a tolerant parser and a formatter.

The parser never raises: a malformed header yields whatever challenges could be read, so a broken
server header degrades to "no hint" (well-known discovery still runs) instead of a crash.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_WS = " \t"


@dataclass
class Challenge:
    """One challenge: its `scheme` as sent, its `params` (names lower-cased, first occurrence wins)
    and the `token68` form, if the challenge used that instead of parameters."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)
    token68: str | None = None

    def get(self, name: str) -> str | None:
        """The parameter `name` (any case), or None."""
        return self.params.get(name.lower())

    def is_scheme(self, scheme: str) -> bool:
        """Whether the challenge's scheme is `scheme` (compared without case)."""
        return self.scheme.lower() == scheme.lower()


def parse_www_authenticate(values: str | Iterable[str]) -> list[Challenge]:
    """All challenges in `values`: one or more `WWW-Authenticate` header values."""
    if isinstance(values, str):
        values = [values]
    challenges: list[Challenge] = []
    for value in values:
        challenges.extend(_parse_one(value))
    return challenges


def _skip(s: str, i: int, chars: str) -> int:
    while i < len(s) and s[i] in chars:
        i += 1
    return i


def _read_quoted(s: str, i: int) -> tuple[str, int]:
    """A quoted-string starting at s[i] == '"'; returns its unescaped value and the index after it."""
    out: list[str] = []
    i += 1
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            out.append(s[i + 1])
            i += 2
            continue
        if ch == '"':
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return "".join(out), i  # unterminated: keep what was there


def _parse_one(s: str) -> list[Challenge]:
    challenges: list[Challenge] = []
    current: Challenge | None = None
    i = 0
    while i < len(s):
        i = _skip(s, i, _WS + ",")
        if i >= len(s):
            break
        m = _TOKEN.match(s, i)
        if m is None:
            i += 1  # stray character: skip it
            continue
        name, j = m.group(), m.end()
        k = _skip(s, j, _WS)
        if current is not None and k < len(s) and s[k] == "=":
            i = _read_param_value(s, k + 1, current, name)
            continue
        current = Challenge(scheme=name)
        challenges.append(current)
        i = _read_token68(s, j, current)
    return challenges


def _read_param_value(s: str, i: int, challenge: Challenge, name: str) -> int:
    i = _skip(s, i, _WS)
    if i < len(s) and s[i] == '"':
        value, i = _read_quoted(s, i)
    else:
        m = _TOKEN.match(s, i)
        value, i = (m.group(), m.end()) if m else ("", i)
    challenge.params.setdefault(name.lower(), value)
    return i


def _read_token68(s: str, i: int, challenge: Challenge) -> int:
    """After a scheme: a token68 credential if one stands alone there, else leave `i` for params."""
    k = _skip(s, i, _WS)
    if k == i or k >= len(s):
        return i
    m = _TOKEN68.match(s, k)
    if m is None:
        return i
    after = _skip(s, m.end(), _WS)
    if after >= len(s) or s[after] == ",":
        challenge.token68 = m.group()
        return after
    return i


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_challenge(scheme: str, params: Mapping[str, str | None]) -> str:
    """`scheme name="value", ...` from `params`, with every value quoted; `None` values are left out."""
    rendered = ", ".join(f"{name}={_quote(value)}" for name, value in params.items() if value is not None)
    return f"{scheme} {rendered}" if rendered else scheme


def first_with(challenges: Iterable[Challenge], *schemes: str) -> Challenge | None:
    """The first challenge whose scheme is one of `schemes` (case-insensitive)."""
    wanted = {s.lower() for s in schemes}
    for challenge in challenges:
        if challenge.scheme.lower() in wanted:
            return challenge
    return None
