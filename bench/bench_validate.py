"""Validation throughput of three messages: mcpgen's generated models against mcp-types, same process."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as mt
from _util import best_rate, save, table
from mcpgen.generated.v2026_07_28 import models as m

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1.0"},
}
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"_meta": META, "name": "get_weather", "arguments": {"city": "Paris", "days": 3, "units": "metric"}},
}


def tool(i: int) -> dict[str, Any]:
    return {
        "name": f"tool_{i}",
        "title": f"Tool {i}",
        "description": "Does a thing with the input and returns a result. " * 3,
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}},
            "required": ["a"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": False},
    }


TOOLS = {
    "resultType": "complete",
    "tools": [tool(i) for i in range(100)],
    "ttlMs": 60000,
    "cacheScope": "public",
    "nextCursor": "abc",
}
INPUT_REQUIRED = {
    "resultType": "input_required",
    "requestState": "eyJzdGF0ZSI6IjEyMyJ9" * 4,
    "inputRequests": {
        "confirm": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Confirm?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}, "name": {"type": "string", "minLength": 1}},
                    "required": ["ok"],
                },
            },
        },
        "llm": {
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}], "maxTokens": 100},
        },
        "roots": {"method": "roots/list"},
    },
}
CASES = [
    ("tools/call request", m.CallToolRequest, mt.CallToolRequest, CALL, 3000),
    ("tools/list result, 100 tools", m.ListToolsResult, mt.ListToolsResult, TOOLS, 60),
    ("InputRequiredResult", m.InputRequiredResult, mt.InputRequiredResult, INPUT_REQUIRED, 2000),
]


def main() -> None:
    rows = []
    for name, ours, theirs, data, number in CASES:
        raw = json.dumps(data)
        assert ours.model_validate_json(raw).model_dump(mode="json", exclude_unset=True) == data
        theirs.model_validate_json(raw)
        for mode in ("json", "python"):
            if mode == "json":
                rate_ours = best_rate(lambda o=ours, r=raw: o.model_validate_json(r), number)
                rate_theirs = best_rate(lambda t=theirs, r=raw: t.model_validate_json(r), number)
            else:
                rate_ours = best_rate(lambda o=ours, d=data: o.model_validate(d), number)
                rate_theirs = best_rate(lambda t=theirs, d=data: t.model_validate(d), number)
            rows.append(
                {
                    "message": name,
                    "input": "JSON text" if mode == "json" else "dict",
                    "mcpgen /s": f"{rate_ours:,.0f}",
                    "mcp-types /s": f"{rate_theirs:,.0f}",
                    "ratio": f"{rate_ours / rate_theirs:.2f}x",
                }
            )
    save("validate", rows)
    print(table(rows, ["message", "input", "mcpgen /s", "mcp-types /s", "ratio"]))


if __name__ == "__main__":
    main()
