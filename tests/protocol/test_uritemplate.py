"""RFC 6570 matching: results, safety rules, and linear time whatever the URI (hypothesis)."""

from __future__ import annotations

import re
import string

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcpgen.runtime.protocol.uritemplate import UriTemplate, normalize


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("s://a{?x,y}", "s://a?y=2", {"y": "2"}),
        ("s://a{?x,y}", "s://a?y=2&x=1", {"x": "1", "y": "2"}),
        ("s://a{?x,y}", "s://a", {}),
        ("search{?q}{&lang}", "search?lang=en&q=cat", {"q": "cat", "lang": "en"}),
        ("x{;a,b}", "x;b=2;a=1", {"a": "1", "b": "2"}),
        ("mem://dir/{name}", "mem://dir/a%20b", {"name": "a b"}),
        ("file:///{+path}", "file:///a/b%2Fc", {"path": "a/b/c"}),
        ("mem://dir/{name}", "mem://dir/..%2F..%2Fetc%2Fpasswd", None),
        ("mem://dir/{name}", "mem://dir/a/b", None),
        ("file:///{name}.{ext}", "file:///a.b.c", {"name": "a.b", "ext": "c"}),
        ("r://{a,b}", "r://1,2", {"a": "1", "b": "2"}),
        ("r://x{/a,b}", "r://x/1/2", {"a": "1", "b": "2"}),
        ("r://x{.a}", "r://x.json", {"a": "json"}),
        ("r://x{#f}", "r://x#a/b", {"f": "a/b"}),
    ],
)
def test_uri_template_matching(template: str, uri: str, expected: dict[str, str] | None) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "values"),
    [
        ("s://a{?x,y}", {"y": "2"}),
        ("s://a{?x,y}", {"x": "1 2", "y": "3"}),
        ("r://{a}/{b}", {"a": "é", "b": "x"}),
        ("f://{+p}", {"p": "a/b"}),
    ],
)
def test_uri_templates_match_their_own_expansions(template: str, values: dict[str, str]) -> None:
    t = UriTemplate(template)
    assert t.match(t.expand(**values)) == values


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("mem://q{?x}", "mem://q?x=..%2F..%2Fetc%2Fpasswd"),
        ("mem://q{?a}{&x}", "mem://q?a=1&x=..%2fsecret"),
        ("mem://q{;x}", "mem://q;x=..%2Fa"),
        ("mem://q/{x}", "mem://q/%2F"),
        ("mem://q{.x}", "mem://q.%2f"),
        ("mem://q{/x}", "mem://q/..%2F"),
    ],
)
def test_an_encoded_slash_never_reaches_a_value_that_may_not_hold_one(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("file:///docs/../../etc/passwd", None),
        ("file:///docs/%2e%2e/%2E%2E/etc/passwd", None),
        ("file:///docs/a/../../../etc", None),
        ("file:///docs/a/../b.txt", {"path": "b.txt"}),
        ("file:///docs/./a/./b", {"path": "a/b"}),
        ("file:///docs/a%2F..%2F..%2Fsecret", {"path": "a/../../secret"}),  # encoded: data, not a path step
    ],
)
def test_dot_segments_are_resolved_before_matching_and_never_climb_out(uri: str, expected: object) -> None:
    assert UriTemplate("file:///docs/{+path}").match(uri) == expected


def test_normalize_refuses_climbing_above_the_root() -> None:
    assert normalize("file:///a/..") == "file:///"
    assert normalize("file:///..") is None
    assert normalize("mem://host/x/../y?q=../../z") == "mem://host/y?q=../../z"  # the query is not a path


@pytest.mark.anyio
async def test_matching_is_linear_in_the_uri_length() -> None:
    """The attack that took seconds (`a.` x 8000 against `{name}.{ext}`) and, 6x longer, minutes
    with a backtracking matcher, is answered at once. It runs in a thread so the generous limit,
    which only detects a hang, can stop the test even while the match spins."""

    def attack() -> None:
        template = UriTemplate("file:///{name}.{ext}")
        assert template.match("file:///" + "a." * 50_000 + "/") is None
        assert template.match("file:///" + "a." * 50_000 + "x") == {"name": "a." * 49_999 + "a", "ext": "x"}
        for other in ("x{;a,b}", "r://{a}{b}{c}{d}", "q{?a,b}{&c}", "f://{+a}.{+b}.{+c}"):
            UriTemplate(other).match(other.split("{")[0] + ";=,." * 20_000 + "\n")

    with anyio.fail_after(30):
        await anyio.to_thread.run_sync(attack, abandon_on_cancel=True)


# -- the matcher agrees with a backtracking regex on small inputs --------------------------------

_REGEX_VALUE = {"": "[^/?#]*", "+": ".*?", "#": ".*?", ".": "[^/?#.]*", "/": "[^/?#]*"}


def _reference(template: UriTemplate) -> re.Pattern[str]:
    """The same template as a Python regex (a backtracking matcher): the oracle."""
    pieces = []
    slot = 0
    for part in template._parts:
        if isinstance(part, str):
            pieces.append(re.escape(part))
            continue
        first, sep = {"": ("", ","), "+": ("", ","), "#": ("#", ","), ".": (".", "."), "/": ("/", "/")}.get(
            part.op, ("", "")
        )
        if part.op in ("?", "&", ";"):
            body = "[^#]*" if part.op != ";" else "[^/?#]*"
            lead = {"?": "\\?", "&": "&", ";": ";"}[part.op]
            pieces.append(f"(?:{lead}(?P<s{slot}>{body}))?")
            slot += 1
            continue
        listed = len(part.variables) > 1
        for i, var in enumerate(part.variables):
            value = _REGEX_VALUE[part.op]
            if listed or var.explode:
                value = value.replace("]", ",]") if value.startswith("[") else "[^,]*?"
            pieces.append(f"(?:{re.escape(first if i == 0 else sep)}(?P<s{slot}>{value}))?")
            slot += 1
    return re.compile("^" + "".join(pieces) + "$")


templates = st.sampled_from(
    ["x/{a}.{b}", "x{/a,b}{?c}", "{+a}/{b}", "x{;a}{.b}", "{a}{b}", "x{#a,b}", "q{?a,b}{&c}", "{+a}.{+b}"]
)
uris = st.text(alphabet=string.ascii_lowercase[:3] + "/.;,?&=#x", max_size=14)


@settings(max_examples=400, deadline=None)
@given(template=templates, uri=uris)
def test_the_linear_matcher_finds_what_a_backtracking_matcher_finds(template: str, uri: str) -> None:
    compiled = UriTemplate(template)
    if normalize(uri) != uri:
        return  # dot segments: resolved first by design
    oracle = _reference(compiled).match(uri)
    saves = compiled._matcher.match(uri)
    assert (saves is None) == (oracle is None)
    if oracle is not None and saves is not None:
        for slot in range(len(compiled._slots)):
            start, end = saves[2 * slot], saves[2 * slot + 1]
            assert (oracle.group(f"s{slot}") if start >= 0 else None) == (uri[start:end] if start >= 0 else None)
