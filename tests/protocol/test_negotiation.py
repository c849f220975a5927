"""The client's negotiation decisions, tested synchronously: each mode's first step, and what follows
each kind of answer."""

from __future__ import annotations

from mcpgen.runtime.protocol.eras import Eras
from mcpgen.runtime.protocol.errors import (
    UnsupportedProtocolVersion,
)
from mcpgen.runtime.protocol.negotiation import Adopt, Fail, Initialize, Negotiation, Probe
from mcpgen.runtime.protocol.tables import VersionRegistry
from support.peers import V25, V26

REGISTRY = VersionRegistry()


# -- negotiation decisions ---------------------------------------------------------------------------


def plan(mode: str = "auto", versions: tuple[str, ...] = (V25, V26)) -> Negotiation:
    return Negotiation(Eras(REGISTRY), versions, mode)


DISCOVER = {"resultType": "complete", "supportedVersions": [V26, V25], "capabilities": {}}


def test_negotiation_starts_by_mode() -> None:
    assert plan().start() == Probe(V26)
    assert plan("handshake").start() == Initialize(V25, exact=False)
    assert plan(V26).start() == Adopt(V26, None)
    assert plan(V25).start() == Initialize(V25, exact=True)
    assert plan(versions=(V25,)).start() == Initialize(V25, exact=False)
    assert isinstance(plan("handshake", (V26,)).start(), Fail)


def test_negotiation_after_discover() -> None:
    p = plan()
    p.start()
    assert p.after_discover(DISCOVER, V26) == Adopt(V26, DISCOVER)
    assert p.after_discover({**DISCOVER, "supportedVersions": [V25]}, V26) == Initialize(V25, exact=False)
    assert p.after_discover({"supportedVersions": [V26]}, V26) == Initialize(V25, exact=False), "no resultType: legacy"
    assert isinstance(p.after_discover({**DISCOVER, "supportedVersions": ["2030-01-01"]}, V26), Fail)


def test_negotiation_after_a_refused_probe() -> None:
    p = plan()
    p.start()
    refusal = UnsupportedProtocolVersion("no", data={"supported": [V26], "requested": V26})
    assert p.after_probe_error(refusal, V26) == Probe(V26), "one retry with the version the server lists"
    assert isinstance(p.after_probe_error(refusal, V26), Fail), "but not forever"
    from mcpgen.runtime.protocol.errors import HeaderMismatch, MethodNotFound

    assert isinstance(p.after_probe_error(HeaderMismatch("h"), V26), Fail), "a modern error never falls back"
    assert p.after_probe_error(MethodNotFound("m"), V26) == Initialize(V25, exact=False)


def test_negotiation_after_initialize() -> None:
    answer = {"protocolVersion": V25, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    assert plan().after_initialize(answer, V25, exact=False) == Adopt(V25, answer)
    assert isinstance(plan().after_initialize({**answer, "protocolVersion": "2024-11-05"}, V25, exact=False), Fail)
    assert isinstance(plan().after_initialize({"protocolVersion": V25}, V25, exact=True), Fail), "invalid result"
