"""The resolver of grouped options and the keywords that moved into them (`core.options`), on
groups of its own: nested fields, a whole group spread into another, None as "not given"."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field, fields

import pytest
from mcpgen.runtime.client.options import ClientOptions, resolve_client_options
from mcpgen.runtime.core.options import Moved, group_types, resolve_groups
from mcpgen.runtime.server.options import ServerOptions, resolve_server_options


@dataclass(frozen=True)
class Inner:
    a: int = 1
    b: str = "b"


@dataclass(frozen=True)
class Outer:
    x: int = 0
    inner: Inner = field(default_factory=Inner)


@dataclass(frozen=True)
class Old:
    x: int = 5


KINDS = {"outer": Outer}
MOVES = {
    "flat_x": Moved("outer", ("x",)),
    "flat_a": Moved("outer", ("inner", "a")),
    "inner": Moved("outer", ("inner",), none_ignored=True),
    "old": Moved("outer", spread=Old, none_ignored=True),
}


def resolve(**deprecated: object) -> tuple[Outer, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resolved = resolve_groups("Thing", KINDS, MOVES, {}, deprecated)["outer"]
    return resolved, [str(w.message) for w in caught]


def test_defaults_and_given_groups_pass_through_quietly() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_groups("Thing", KINDS, MOVES, {}, {}) == {"outer": Outer()}
        given = Outer(x=3)
        assert resolve_groups("Thing", KINDS, MOVES, {"outer": given}, {})["outer"] is given


def test_a_nested_field_is_set_and_the_warning_spells_the_path() -> None:
    resolved, messages = resolve(flat_a=7, flat_x=2)
    assert resolved == Outer(x=2, inner=Inner(a=7))
    assert messages == [
        "Thing(flat_a=...) is deprecated; use Thing(outer=Outer(inner=Inner(a=...)))",
        "Thing(flat_x=...) is deprecated; use Thing(outer=Outer(x=...))",
    ]


def test_a_spread_group_sets_its_fields_under_the_same_names() -> None:
    resolved, messages = resolve(old=Old(x=9))
    assert resolved == Outer(x=9)
    assert messages == ["Thing(old=...) is deprecated; use Thing(outer=Outer(x=...))"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=re.escape("Thing(old=...) takes Old(...), not Inner")):
            resolve_groups("Thing", KINDS, MOVES, {}, {"old": Inner()})


def test_none_as_not_given_warns_and_changes_nothing() -> None:
    resolved, messages = resolve(inner=None, old=None)
    assert resolved == Outer()
    assert len(messages) == 2


def test_overlapping_keywords_and_unknown_ones_are_type_errors() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=re.escape("got both inner= and flat_a= (both deprecated)")):
            resolve_groups("Thing", KINDS, MOVES, {}, {"inner": Inner(), "flat_a": 3})
        with pytest.raises(TypeError, match=re.escape("got both flat_x= and old= (both deprecated)")):
            resolve_groups("Thing", KINDS, MOVES, {}, {"flat_x": 1, "old": Old()})
        with pytest.raises(TypeError, match=re.escape("got both outer= and the deprecated flat_x=; use outer= only")):
            resolve_groups("Thing", KINDS, MOVES, {"outer": Outer()}, {"flat_x": 1})
    with pytest.raises(TypeError, match=re.escape("Thing() got an unexpected keyword argument 'flat_y'")):
        resolve_groups("Thing", KINDS, MOVES, {}, {"flat_y": 1})


def test_group_types_are_the_fields_of_the_options_dataclass() -> None:
    @dataclass
    class Options:
        outer: Outer = field(default_factory=Outer)
        old: Old = field(default_factory=Old)

    assert group_types(Options) == {"outer": Outer, "old": Old}

    @dataclass
    class NotGroups:
        outer: Outer = field(default_factory=Outer)
        count: int = 0

    with pytest.raises(TypeError, match=r"NotGroups\.count is not a group"):
        group_types(NotGroups)


def test_the_client_and_server_groups_are_their_options_fields() -> None:
    for options, resolve in ((ClientOptions, resolve_client_options), (ServerOptions, resolve_server_options)):
        resolved = resolve({}, {})
        assert isinstance(resolved, options)
        for item in fields(options):
            assert type(getattr(resolved, item.name)) is item.default_factory
