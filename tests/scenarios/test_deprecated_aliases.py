"""What the layering moved or renamed keeps working for one release, with a `DeprecationWarning`
that names what to use instead: the old module paths, the flat `Client`/`Server` keywords, and
`mode="legacy"`."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest
from mcpgen.runtime import (
    Caching,
    Client,
    ClientChecks,
    ClientHooks,
    ClientLimits,
    InputHandlers,
    Sealing,
    Server,
    ServerLimits,
    Timeouts,
    memory_pair,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("old", "names", "new"),
    [
        ("mcpgen.runtime.transport", ["stdio", "http", "memory_pair", "Transport", "LineSplitter"], "mcpgen.runtime"),
        (
            "mcpgen.runtime.transport.http_serve",
            ["app_factory", "load_server", "bind", "serve_http", "run_http"],
            "mcpgen.runtime.server.http",
        ),
        ("mcpgen.runtime.transport.http_server", ["HttpApp", "close_sse_stream"], "mcpgen.runtime.server.http.app"),
        ("mcpgen.runtime.mrtr", ["elicit", "elicit_url", "sample", "list_roots", "InputRequired"], "mcpgen.runtime"),
        ("mcpgen.runtime.capabilities", ["has_capability", "merge_capabilities"], "mcpgen.runtime.protocol"),
        ("mcpgen.runtime.registry", ["VersionRegistry", "Protocol"], "mcpgen.runtime"),
    ],
)
def test_old_module_paths_warn_and_give_the_same_objects(old: str, names: list[str], new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated; import from {new}"):
        module = importlib.import_module(old)
    for name in names:
        value = getattr(module, name)
        assert getattr(value, "__module__", "mcpgen.runtime").startswith("mcpgen.runtime"), name


def test_the_old_worker_factory_path_still_serves() -> None:
    """`uvicorn --factory mcpgen.runtime.transport.http_serve:app_factory` (the earlier documented
    command) still builds the app, in a process of its own."""
    script = (
        "import os, warnings\n"
        "warnings.simplefilter('error')\n"
        "os.environ['MCPGEN_SERVER'] = 'examples/everything_server.py:server'\n"
        "try:\n"
        "    from mcpgen.runtime.transport.http_serve import app_factory\n"
        "except DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore')\n"
        "from mcpgen.runtime.transport.http_serve import app_factory\n"
        "print(type(app_factory()).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "warned: mcpgen.runtime.transport" in out and out.strip().endswith("HttpApp")


def test_flat_client_keywords_warn_and_land_in_their_groups() -> None:
    def on_log(level: object, data: object, logger: object) -> None: ...

    with pytest.warns(DeprecationWarning) as caught:
        client = Client(
            memory_pair()[0],
            request_timeout=7,
            probe_timeout=1,
            max_pages=3,
            mrtr=False,
            on_log=on_log,
            validate_structured_output=False,
            accept_older=True,
        )
    messages = [str(w.message) for w in caught]
    assert "Client(request_timeout=...) is deprecated; use Client(timeouts=Timeouts(request=...))" in messages
    assert "Client(mrtr=...) is deprecated; use Client(inputs=InputHandlers(drive=...))" in messages
    assert client.timeouts == Timeouts(request=7, probe=1)
    assert client.limits == ClientLimits(max_pages=3)
    assert client.hooks == ClientHooks(on_log=on_log)
    assert client.checks == ClientChecks(structured_output=False, older_handshake=True)
    assert client.inputs.drives is False and client.output_checker is None


def test_a_group_and_its_old_keyword_together_are_refused() -> None:
    with pytest.raises(TypeError, match="both timeouts= and the deprecated request_timeout="):
        Client(memory_pair()[0], timeouts=Timeouts(), request_timeout=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'request_timout'"):
        Client(memory_pair()[0], request_timout=3)  # type: ignore[call-arg]


def test_flat_server_keywords_warn_and_land_in_their_groups() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        server = Server(
            "s", page_size=5, cache_ttl_ms=10, cache_scope="public", state_keys=[b"k" * 32], max_input_rounds=2
        )
    assert "Server(page_size=...) is deprecated; use Server(limits=ServerLimits(page_size=...))" in [
        str(w.message) for w in caught
    ]
    assert server.limits == ServerLimits(page_size=5, max_input_rounds=2)
    assert server.caching == Caching(ttl_ms=10, scope="public")
    assert server.sealing == Sealing(keys=[b"k" * 32])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Server("quiet", sealing=Sealing(keys=b"k" * 32), limits=ServerLimits(page_size=None))


async def test_legacy_mode_warns_and_runs_the_handshake() -> None:
    server = Server("s")
    with pytest.warns(DeprecationWarning, match="mode='handshake'"):
        client = Client(server, mode="legacy")
    async with client:
        assert client.era == "handshake" and client.protocol_version == "2025-11-25"
    async with Client(server, mode="handshake", inputs=InputHandlers()) as client:
        assert client.protocol_version == "2025-11-25"
