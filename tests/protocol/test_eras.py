"""The eras as rules, tested synchronously: the order eras claim requests in comes from the tables'
dates, a version named in a header belongs to an era even when the tree lacks it, and a tree with
an era the runtime has no rules for is refused by name."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

import pytest
from mcpgen.generated import versions as real_tree
from mcpgen.runtime.protocol.eras import Eras, HandshakeRules, ModernRules, message_version
from mcpgen.runtime.protocol.tables import VersionRegistry
from mcpgen.runtime.server.eras import HandshakeServing, ModernServing, serving
from support.peers import V25, V26

ERAS = Eras(VersionRegistry())


def fake_tree(eras: dict[str, str]) -> ModuleType:
    """A generated tree reduced to what the era rules read: versions (oldest first), their eras."""
    tree = ModuleType("fake_versions")
    supported = tuple(sorted(eras))
    tree.SUPPORTED = supported  # type: ignore[attr-defined]
    tree.HANDSHAKE, tree.MODERN = real_tree.HANDSHAKE, real_tree.MODERN  # type: ignore[attr-defined]
    tree.era = lambda version: eras[version]  # type: ignore[attr-defined]
    tree.compare = real_tree.compare  # type: ignore[attr-defined]
    tree.newest_mutual = real_tree.newest_mutual  # type: ignore[attr-defined]

    def methods(version: str) -> dict[str, Any]:
        return {}

    tree.methods = methods  # type: ignore[attr-defined]
    return tree


def names(rules: Iterable[Any]) -> list[str]:
    return [r.name for r in rules]


def test_the_newest_era_claims_first_by_the_dates_of_its_versions() -> None:
    assert names(ERAS.newest_first) == ["modern", "handshake"]
    assert isinstance(ERAS.of(V25), HandshakeRules) and isinstance(ERAS.of(V26), ModernRules)
    # the same rules, in a tree where the handshake era has the newest version: the order follows
    flipped = Eras(VersionRegistry(fake_tree({"2024-01-01": "modern", "2030-01-01": "handshake"})))
    assert names(flipped.newest_first) == ["handshake", "modern"]


@pytest.mark.parametrize(
    ("header", "era"),
    [
        (V25, "handshake"),
        (V26, "modern"),
        ("2024-11-05", "handshake"),  # older than every version: the oldest era
        ("2026-01-01", "handshake"),  # between the two: the era of the newest version before it
        ("2027-03-01", "modern"),  # newer than every version: the newest era
        ("  2025-11-25 ", "handshake"),
        ("garbage", "modern"),  # not a date: the newest era, whose ladder refuses it properly
        ("2026-02-30", "modern"),  # not a real date either
    ],
)
def test_a_header_version_belongs_to_an_era_even_when_the_tree_lacks_it(header: str, era: str) -> None:
    assert ERAS.of_header(header).name == era


def test_a_message_names_its_own_version_in_meta_or_not_at_all() -> None:
    assert message_version({"_meta": {"io.modelcontextprotocol/protocolVersion": V26}}) == V26
    assert message_version({"_meta": {"progressToken": 1}}) is None
    assert message_version({"_meta": "not an object"}) is None
    assert message_version(None) is None


def test_each_era_has_its_rules_and_a_strategy_on_the_server() -> None:
    assert ERAS.of(V25).session_method == "initialize" and not ERAS.of(V25).self_contained
    assert ERAS.of(V26).session_method is None and ERAS.of(V26).self_contained
    strategies = serving(ERAS)
    assert isinstance(strategies["handshake"], HandshakeServing)
    assert isinstance(strategies["modern"], ModernServing)
    assert strategies["modern"].rules is ERAS.named("modern")


def test_an_era_without_rules_is_refused_by_name() -> None:
    with pytest.raises(LookupError, match="no rules for: \\['future'\\]"):
        Eras(VersionRegistry(fake_tree({"2025-11-25": "handshake", "2031-01-01": "future"})))
    with pytest.raises(LookupError, match="no rules for the era 'future'"):
        ERAS.named("future")
