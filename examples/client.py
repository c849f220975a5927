"""A client that answers a server's questions: elicitation, sampling and roots handlers.

    python examples/client.py [auto|legacy|2026-07-28]

It starts `examples/everything_server.py` over stdio. The same handlers serve both eras: on a
modern connection the client's multi-round-trip driver calls them for each `InputRequiredResult`
and retries; on a handshake-era connection they answer the server's requests directly.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcpgen.runtime import Client, InputHandlers

SERVER = [sys.executable, str(Path(__file__).resolve().parent / "everything_server.py")]


async def elicitation(params: Any) -> dict[str, Any]:
    """A stand-in for asking the user: accept forms with a made-up answer, accept URL visits."""
    print(f"  [elicitation] {params.message}")
    if getattr(params, "mode", None) == "url":
        print(f"  [elicitation] would open {params.url}")
        return {"action": "accept"}  # URL mode: the data goes to the site, never through the client
    fields = params.requested_schema.properties
    answer: dict[str, Any] = {}
    for name, schema in fields.items():
        kind = getattr(schema, "type", None)
        if kind == "boolean":
            answer[name] = True
        elif kind in ("integer", "number"):
            answer[name] = 2
    return {"action": "accept", "content": answer}  # fields left out get their defaults


async def sampling(params: Any) -> dict[str, Any]:
    """A stand-in for a model call."""
    prompt = params.messages[0].content.text
    print(f"  [sampling] {prompt!r}")
    return {
        "role": "assistant",
        "content": {"type": "text", "text": f"(a model's answer to {prompt!r})"},
        "model": "example-model",
    }


async def main(mode: str) -> None:
    async with Client(
        SERVER,
        mode=mode,
        inputs=InputHandlers(
            elicitation=elicitation,
            elicitation_modes=("form", "url"),
            sampling=sampling,
            roots=[{"uri": "file:///home/me/projects", "name": "projects"}],
        ),
    ) as client:
        print(f"connected with {client.protocol_version} ({client.era} era)")
        for tool, arguments in (
            ("confirm_action", {"action": "deploy"}),
            ("connect_account", {}),
            ("summarize", {"text": "MCP lets AI hosts talk to tool servers."}),
            ("client_roots", {}),
            ("plan_trip", {"city": "Lyon"}),
        ):
            result = await client.call_tool(tool, arguments)
            texts = [block.text for block in result.content if block.type == "text"]
            print(f"{tool}: {result.structured_content if result.structured_content is not None else texts}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "auto")
