"""The cost of round trip by default: dumping parsed messages with no arguments.

Every generated model derives from `MCPModel`, whose `model_dump`/`model_dump_json` default to
`exclude_unset=True` (so parse then dump gives the wire message back). This measures what that
default costs against calling pydantic's own method with the same arguments (no override in
between), and puts mcp-types' dump of the same message beside it, same process.
"""

from __future__ import annotations

import json

import mcp_types as mt
from _util import best_rate, save, table
from bench_validate import CALL, INPUT_REQUIRED, TOOLS
from mcpgen.generated.v2026_07_28 import models as m
from pydantic import BaseModel

CASES = [
    ("tools/call request", m.CallToolRequest, mt.CallToolRequest, CALL, 5000),
    ("tools/list result, 100 tools", m.ListToolsResult, mt.ListToolsResult, TOOLS, 100),
    ("InputRequiredResult", m.InputRequiredResult, mt.InputRequiredResult, INPUT_REQUIRED, 3000),
]


def main() -> None:
    rows = []
    for name, ours, theirs, data, number in CASES:
        raw = json.dumps(data)
        mine = ours.model_validate_json(raw)
        other = theirs.model_validate_json(raw)
        assert json.loads(mine.model_dump_json()) == data, "parse then dump gives the message back"
        default = best_rate(mine.model_dump_json, number)
        direct = best_rate(lambda o=mine: BaseModel.model_dump_json(o, exclude_unset=True), number)
        official = best_rate(lambda o=other: o.model_dump_json(by_alias=True, exclude_unset=True), number)
        rows.append(
            {
                "message": name,
                "model_dump_json() /s": f"{default:,.0f}",
                "pydantic's, exclude_unset /s": f"{direct:,.0f}",
                "default vs direct": f"{default / direct:.2f}x",
                "mcp-types /s": f"{official:,.0f}",
                "vs mcp-types": f"{default / official:.2f}x",
            }
        )
    save("dump", rows)
    print(table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
