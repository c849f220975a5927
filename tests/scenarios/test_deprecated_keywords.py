"""The keywords `Client` and `Server` took before their options were grouped keep working for one
release: each warns (a `DeprecationWarning` naming the new spelling, pointed at the caller), and
lands where the new spelling puts it. Passing a keyword together with the group it moved into is a
clear error, and the new spellings are quiet."""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from mcpgen.runtime import (
    Caching,
    Client,
    ClientAdvertising,
    ClientChecks,
    ClientHooks,
    ClientLimits,
    Diagnostics,
    InputHandlers,
    Sealing,
    Server,
    ServerAdvertising,
    ServerLimits,
    Telemetry,
    Timeouts,
    Transport,
    memory_pair,
    visible_by_scopes,
)
from mcpgen.runtime.client.tasks import EXTENSION as TASKS_EXTENSION
from mcpgen.runtime.protocol.keys import CLIENT_INFO_KEY, LOG_LEVEL_KEY
from support.peers import V26

pytestmark = pytest.mark.anyio

INFO = {"name": "old-style", "version": "2"}
OFF = Telemetry(enabled=False)


def only_ops(ctx: Any, item: Any) -> bool:
    return False


# old keyword, its value, the new spelling the warning names, where it must land
SERVER_KEYWORDS: list[tuple[str, Any, str, Callable[[Server[Any]], bool]]] = [
    (
        "title",
        "Old Title",
        "Server(advertising=ServerAdvertising(title=...))",
        lambda s: s.info["title"] == "Old Title" and s.advertising.title == "Old Title",
    ),
    (
        "capabilities",
        {"experimental": {"x": {}}},
        "Server(advertising=ServerAdvertising(capabilities=...))",
        lambda s: s.capabilities()["experimental"] == {"x": {}},
    ),
    (
        "list_changed",
        False,
        "Server(advertising=ServerAdvertising(list_changed=...))",
        lambda s: s.list_changed is False and s.advertising.list_changed is False,
    ),
    (
        "logging",
        False,
        "Server(advertising=ServerAdvertising(logging=...))",
        lambda s: s.logging is False and "logging" not in s.capabilities(),
    ),
    (
        "caching",
        Caching(ttl_ms=5, scope="public"),
        "Server(advertising=ServerAdvertising(caching=...))",
        lambda s: s.caching == Caching(ttl_ms=5, scope="public") == s.advertising.caching,
    ),
    (
        "cache_ttl_ms",
        10,
        "Server(advertising=ServerAdvertising(caching=Caching(ttl_ms=...)))",
        lambda s: s.caching == Caching(ttl_ms=10),
    ),
    (
        "cache_scope",
        "public",
        "Server(advertising=ServerAdvertising(caching=Caching(scope=...)))",
        lambda s: s.caching == Caching(scope="public"),
    ),
    (
        "visibility",
        only_ops,
        "Server(advertising=ServerAdvertising(visibility=...))",
        lambda s: s.visibility is only_ops,
    ),
    (
        "validate_results",
        False,
        "Server(diagnostics=Diagnostics(validate_results=...))",
        lambda s: s.validate_results is False and s.diagnostics == Diagnostics(validate_results=False),
    ),
    (
        "page_size",
        5,
        "Server(limits=ServerLimits(page_size=...))",
        lambda s: s.limits == ServerLimits(page_size=5),
    ),
    (
        "max_input_rounds",
        2,
        "Server(limits=ServerLimits(max_input_rounds=...))",
        lambda s: s.limits == ServerLimits(max_input_rounds=2),
    ),
    (
        "state_keys",
        [b"k" * 32],
        "Server(sealing=Sealing(keys=...))",
        lambda s: s.sealing == Sealing(keys=[b"k" * 32]),
    ),
]

CLIENT_KEYWORDS: list[tuple[str, Any, str, Callable[[Client], bool]]] = [
    (
        "client_info",
        INFO,
        "Client(advertising=ClientAdvertising(info=...))",
        lambda c: c.client_info == INFO and c.request_meta(V26)[CLIENT_INFO_KEY] == INFO,
    ),
    (
        "capabilities",
        {"roots": {}},
        "Client(advertising=ClientAdvertising(capabilities=...))",
        lambda c: c.capabilities(V26) == {"roots": {}},
    ),
    (
        "extensions",
        {"com.example/thing": {"level": 2}},
        "Client(advertising=ClientAdvertising(extensions=...))",
        lambda c: c.capabilities(V26)["extensions"] == {"com.example/thing": {"level": 2}},
    ),
    (
        "log_level",
        "warning",
        "Client(advertising=ClientAdvertising(log_level=...))",
        lambda c: c.log_level == "warning" and c.request_meta(V26)[LOG_LEVEL_KEY] == "warning",
    ),
    (
        "tasks",
        True,
        "Client(advertising=ClientAdvertising(tasks=...))",
        lambda c: c.tasks.enabled and TASKS_EXTENSION in c.capabilities(V26)["extensions"],
    ),
    (
        "telemetry",
        OFF,
        "Client(hooks=ClientHooks(telemetry=...))",
        lambda c: c.hooks.telemetry is OFF and c.telemetry is None,
    ),
    (
        "limits",
        ClientLimits(max_pages=3, max_input_rounds=4),
        "Client(checks=ClientChecks(max_pages=..., max_message_bytes=..., max_input_rounds=...))",
        lambda c: c.checks == ClientChecks(max_pages=3, max_input_rounds=4) and c.inputs.max_rounds == 4,
    ),
    (
        "max_pages",
        3,
        "Client(checks=ClientChecks(max_pages=...))",
        lambda c: c.checks == ClientChecks(max_pages=3),
    ),
    (
        "max_message_bytes",
        2048,
        "Client(checks=ClientChecks(max_message_bytes=...))",
        lambda c: c.checks == ClientChecks(max_message_bytes=2048),
    ),
    (
        "request_timeout",
        7,
        "Client(timeouts=Timeouts(request=...))",
        lambda c: c.timeouts == Timeouts(request=7),
    ),
    (
        "probe_timeout",
        1,
        "Client(timeouts=Timeouts(probe=...))",
        lambda c: c.timeouts == Timeouts(probe=1),
    ),
    (
        "on_log",
        print,
        "Client(hooks=ClientHooks(on_log=...))",
        lambda c: c.hooks == ClientHooks(on_log=print),
    ),
    (
        "accept_older",
        True,
        "Client(checks=ClientChecks(older_handshake=...))",
        lambda c: c.checks == ClientChecks(older_handshake=True),
    ),
    (
        "mrtr",
        False,
        "Client(inputs=InputHandlers(drive=...))",
        lambda c: c.inputs.drives is False,
    ),
    (
        "validate_structured_output",
        False,
        "Client(checks=ClientChecks(structured_output=...))",
        lambda c: c.checks == ClientChecks(structured_output=False) and c.output_checker is None,
    ),
]

# the group each old keyword moved into, given too: which was meant is not clear
SERVER_GROUPS = {
    "advertising": ServerAdvertising(),
    "diagnostics": Diagnostics(),
    "limits": ServerLimits(),
    "sealing": Sealing(),
}
CLIENT_GROUPS = {
    "advertising": ClientAdvertising(),
    "hooks": ClientHooks(),
    "checks": ClientChecks(),
    "timeouts": Timeouts(),
    "inputs": InputHandlers(),
}


def deprecations(caught: Any) -> list[warnings.WarningMessage]:
    """The deprecation warnings caught (a ResourceWarning of an earlier test's garbage may come too)."""
    return [w for w in caught if issubclass(w.category, DeprecationWarning)]


def the_one_deprecation(caught: Any, message: str) -> warnings.WarningMessage:
    """The one deprecation warning caught, which says `message`."""
    found = deprecations(caught)
    assert [str(w.message) for w in found] == [message]
    return found[0]


def both_spellings(keyword: str, value: Any, spelling: str, groups: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Keywords giving an old `keyword` and the group it moved into (from `groups`), and the
    refusal they meet (a pattern)."""
    group = spelling.split("(", 1)[1].split("=", 1)[0]
    refusal = rf"got both {group}= and the deprecated {keyword}=; use {group}= only"
    return {group: groups[group], keyword: value}, refusal


def cases(table: list[Any], fields: int) -> list[Any]:
    """The first `fields` fields of each row of `table` as parameters, named by the keyword."""
    return [pytest.param(*row[:fields], id=row[0]) for row in table]


@pytest.fixture
def transport() -> Transport:
    """A transport for a `Client` that is made and never connected."""
    return memory_pair()[0]


@pytest.mark.parametrize(("keyword", "value", "spelling", "landed"), cases(SERVER_KEYWORDS, 4))
def test_each_old_server_keyword_warns_and_lands_in_its_group(
    keyword: str, value: Any, spelling: str, landed: Callable[[Server[Any]], bool]
) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        server = Server("old", **{keyword: value})
    warning = the_one_deprecation(caught, f"Server({keyword}=...) is deprecated; use {spelling}")
    assert warning.filename == __file__, "the warning points at the code that called Server(...)"
    assert landed(server)


@pytest.mark.parametrize(("keyword", "value", "spelling", "landed"), cases(CLIENT_KEYWORDS, 4))
def test_each_old_client_keyword_warns_and_lands_in_its_group(
    keyword: str, value: Any, spelling: str, landed: Callable[[Client], bool], transport: Transport
) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        client = Client(transport, **{keyword: value})
    warning = the_one_deprecation(caught, f"Client({keyword}=...) is deprecated; use {spelling}")
    assert warning.filename == __file__, "the warning points at the code that called Client(...)"
    assert landed(client)


@pytest.mark.parametrize(("keyword", "value", "spelling"), cases(SERVER_KEYWORDS, 3))
def test_an_old_server_keyword_with_its_new_group_is_refused(keyword: str, value: Any, spelling: str) -> None:
    given, refusal = both_spellings(keyword, value, spelling, SERVER_GROUPS)
    with pytest.raises(TypeError, match=refusal):
        Server("both", **given)


@pytest.mark.parametrize(("keyword", "value", "spelling"), cases(CLIENT_KEYWORDS, 3))
def test_an_old_client_keyword_with_its_new_group_is_refused(
    keyword: str, value: Any, spelling: str, transport: Transport
) -> None:
    given, refusal = both_spellings(keyword, value, spelling, CLIENT_GROUPS)
    with pytest.raises(TypeError, match=refusal):
        Client(transport, **given)


def test_two_old_keywords_for_one_field_are_refused(transport: Transport) -> None:
    twice = re.escape("got both caching= and cache_ttl_ms= (both deprecated); use advertising= only")
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match=twice):
        Server("twice", caching=Caching(), cache_ttl_ms=3)
    twice = re.escape("got both limits= and max_pages= (both deprecated); use checks= only")
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match=twice):
        Client(transport, limits=ClientLimits(), max_pages=3)


def test_old_keywords_together_land_in_one_group(transport: Transport) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        server = Server("many", title="T", logging=False, cache_scope="public", visibility=visible_by_scopes)
    assert len(deprecations(caught)) == 4
    assert server.advertising == ServerAdvertising(
        title="T", logging=False, caching=Caching(scope="public"), visibility=visible_by_scopes
    )
    with pytest.warns(DeprecationWarning) as caught:
        client = Client(transport, client_info=INFO, log_level="info", tasks=True, request_timeout=3)
    assert len(deprecations(caught)) == 4
    assert client.advertising == ClientAdvertising(info=INFO, log_level="info", tasks=True)
    assert client.timeouts == Timeouts(request=3)


def test_the_old_limits_attribute_reads_the_checks(transport: Transport) -> None:
    client = Client(transport, checks=ClientChecks(max_pages=4, max_message_bytes=99, max_input_rounds=2))
    with pytest.warns(DeprecationWarning, match=re.escape("Client.limits is deprecated; use Client.checks")):
        assert client.limits == ClientLimits(max_pages=4, max_message_bytes=99, max_input_rounds=2)


def test_a_misspelt_keyword_is_still_a_type_error(transport: Transport) -> None:
    with pytest.raises(TypeError, match=re.escape("Client() got an unexpected keyword argument 'client_inf'")):
        Client(transport, client_inf=INFO)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=re.escape("Server() got an unexpected keyword argument 'titel'")):
        Server("typo", titel="T")  # type: ignore[call-arg]


def test_a_bad_log_level_is_refused_in_either_spelling(transport: Transport) -> None:
    with pytest.raises(ValueError, match="log_level must be one of"):
        ClientAdvertising(log_level="loud")
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="log_level must be one of"):
        Client(transport, log_level="loud")


def test_the_new_spellings_are_quiet() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        server = Server(
            "quiet",
            "1.0",
            instructions="none",
            advertising=ServerAdvertising(title="Q", list_changed=False, caching=Caching(ttl_ms=1)),
            diagnostics=Diagnostics(validate_results=False),
        )
        client = Client(
            server,
            advertising=ClientAdvertising(info=INFO, log_level="info", tasks=True),
            checks=ClientChecks(max_pages=2),
            hooks=ClientHooks(telemetry=OFF),
        )
    assert server.info == {"name": "quiet", "version": "1.0", "title": "Q"} and server.validate_results is False
    assert client.client_info == INFO and client.checks.max_pages == 2 and client.telemetry is None


def direct_parameters(cls: type) -> list[str]:
    """The parameters of `cls.__init__` a caller names, `**deprecated` (the old keywords) left out."""
    params = inspect.signature(cls.__init__).parameters.values()
    return [p.name for p in params if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]


def test_the_constructors_take_at_most_ten_options() -> None:
    """Issue 15: grouped options, about ten direct parameters (`Server` besides its name and version)."""
    assert len(direct_parameters(Client)) <= 10, direct_parameters(Client)
    assert direct_parameters(Server)[:2] == ["name", "version"]
    assert len(direct_parameters(Server)) <= 12, direct_parameters(Server)
