"""A method that only a future schema version has is served and called through the runtime,
after regeneration, with no runtime change: routing, validation and gates come from the tables."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from mcpgen.runtime import CapabilityError, InvalidParams, RequestContext, Server
from support.peers import connected
from support.schema_changes import BASE, FUTURE, NEW_METHOD, REMOVED_METHOD

pytestmark = pytest.mark.anyio


@pytest.fixture
def registry(future_tree: tuple[Path, Path]) -> Iterator[ModuleType]:
    _, out = future_tree
    sys.path.insert(0, str(out.parent))
    try:
        yield importlib.import_module(f"{out.name}.versions")
    finally:
        sys.path.remove(str(out.parent))


def widget_server(registry: ModuleType) -> Server:
    server = Server("widgets", registry=registry)

    @server.method(NEW_METHOD)
    async def get_widget(ctx: RequestContext, params: Any) -> dict[str, Any]:
        return {"widget": f"widget {params.widget_id} (size {params.size})", "colour": "blue"}

    return server


@pytest.mark.parametrize("mode", ["auto", FUTURE])
async def test_new_method_round_trips(registry: ModuleType, mode: str) -> None:
    async with connected(widget_server(registry), mode=mode, registry=registry) as client:
        assert client.protocol_version == FUTURE
        result = await client.request(NEW_METHOD, {"widgetId": "w7", "size": 3})
        assert type(result).__name__ == "GetWidgetResult"
        assert result.widget == "widget w7 (size 3)"
        assert result.result_type == "complete"
        with pytest.raises(InvalidParams, match="widgetId"):
            await client.request(NEW_METHOD, {"size": 3})


async def test_removed_method_is_gone_in_the_future_version_only(registry: ModuleType) -> None:
    async with connected(widget_server(registry), mode=FUTURE, registry=registry) as client:
        with pytest.raises(CapabilityError, match="not a method"):
            await client.request(
                REMOVED_METHOD, {"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}}
            )
    async with connected(widget_server(registry), mode="auto", versions=[BASE], registry=registry) as client:
        assert client.protocol_version == BASE
        with pytest.raises(CapabilityError, match="does not offer completions"):
            await client.complete({"type": "ref/prompt", "name": "x"}, {"name": "a", "value": ""})


async def test_old_clients_still_negotiate_the_base_version(registry: ModuleType) -> None:
    async with connected(widget_server(registry), mode="auto", registry=registry, versions=[BASE]) as client:
        assert client.protocol_version == BASE
        with pytest.raises(CapabilityError, match="not a method"):
            await client.request(NEW_METHOD, {"widgetId": "w"})
