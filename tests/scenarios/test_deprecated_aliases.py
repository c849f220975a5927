"""What the layering moved or renamed keeps working for one release, with a `DeprecationWarning`
that names what to use instead: the old module paths and `mode="legacy"` (the old `Client` and
`Server` keywords: test_deprecated_keywords)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from mcpgen.runtime import (
    Client,
    InputHandlers,
    Server,
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


async def test_legacy_mode_warns_and_runs_the_handshake() -> None:
    server = Server("s")
    with pytest.warns(DeprecationWarning, match="mode='handshake'"):
        client = Client(server, mode="legacy")
    async with client:
        assert client.era == "handshake" and client.protocol_version == "2025-11-25"
    async with Client(server, mode="handshake", inputs=InputHandlers()) as client:
        assert client.protocol_version == "2025-11-25"
