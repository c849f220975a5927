"""Run in a fresh interpreter: start an HTTP app (its lifespan), then send the first request of
each kind a peer sends, and print (one JSON line) what pydantic built while serving them.

    python tests/support/cold_start.py FILE:ATTR

The generated models are deferred (`defer_build`): whatever is not built when the app starts is
built by the first request that needs it, inside that request's time, which a peer's timeout
counts (the conformance harness gives some first requests 500 ms, a loaded machine makes a
100 ms build take longer). A fresh interpreter, because an earlier test in the same process
may have built the validators already. The count comes from pydantic's schema generator, the
one step every model and adapter build goes through.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from asgi_driver import AsgiClient, meta, modern_headers, request
from mcpgen.runtime.server.http.workers import load_server
from pydantic._internal import _generate_schema


def modern_first_requests() -> list[tuple[str, str | None, dict[str, Any]]]:
    """What the conformance harness's stateless scenario sends first, one of each kind."""
    plain = meta(caps={})
    asking = meta(caps={"elicitation": {}, "sampling": {}})
    return [
        ("server/discover", None, {"_meta": plain}),
        ("tools/list", None, {"_meta": plain}),
        ("prompts/list", None, {"_meta": plain}),
        ("resources/list", None, {"_meta": plain}),
        ("tools/call", "test_missing_capability", {"name": "test_missing_capability", "arguments": {}, "_meta": plain}),
        ("tools/call", "test_simple_text", {"name": "test_simple_text", "arguments": {}, "_meta": plain}),
        ("tools/call", "test_logging_tool", {"name": "test_logging_tool", "arguments": {}, "_meta": plain}),
        (
            "tools/call",
            "test_streaming_elicitation",
            {"name": "test_streaming_elicitation", "arguments": {}, "_meta": asking},
        ),
    ]


async def serve_first_requests(target: str) -> list[str]:
    server = load_server(target)
    app = server.http_app("/mcp")
    built: list[str] = []  # what each build started from (the nested types it steps into are not listed)
    depth = 0
    generator = _generate_schema.GenerateSchema
    original = generator.generate_schema

    def counted(self: Any, obj: Any) -> Any:
        nonlocal depth
        if depth == 0:
            built.append(getattr(obj, "__name__", None) or repr(obj)[:120])
        depth += 1
        try:
            return original(self, obj)
        finally:
            depth -= 1

    async with anyio.create_task_group() as tg, app.run():  # started: from here on, nothing should be built
        generator.generate_schema = counted  # type: ignore[method-assign]
        try:
            client = AsgiClient(app, tg)
            for method, name, params in modern_first_requests():
                reply = await client.post(request(1, method, params), modern_headers(method, name))
                await reply.read()
                if reply.status >= 500:
                    raise RuntimeError(f"{method} {name}: HTTP {reply.status} {reply.body[:300]!r}")
            from pydantic import TypeAdapter

            probed = len(built)
            TypeAdapter(tuple[int, "ColdStartProbe"])  # (a new type: built here) the probe sees a build...
            if len(built) == probed:
                raise RuntimeError("the build probe saw no build: pydantic no longer builds through it")
            del built[probed:]  # ...which is the probe's, not the server's
        finally:
            generator.generate_schema = original  # type: ignore[method-assign]
        tg.cancel_scope.cancel()
    return built


ColdStartProbe = list[str]


def main() -> None:
    built = anyio.run(serve_first_requests, sys.argv[1])
    print(json.dumps({"built": built}))


if __name__ == "__main__":
    main()
