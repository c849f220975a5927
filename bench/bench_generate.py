"""Time `mcpgen generate` for both pinned versions: cold (empty output) and warm (nothing changed)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from _util import median_seconds, save, table

RUNS = 3


def main() -> None:
    mcpgen = str(Path(sys.executable).with_name("mcpgen"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gen"
        cold = []
        for _ in range(RUNS):
            shutil.rmtree(out, ignore_errors=True)
            cold.append(median_seconds([mcpgen, "generate", "-q", "--schema-dir", "schema", "--out", str(out)], 1))
        cold.sort()
        rows.append({"case": "both versions, cold (parallel workers)", "seconds": f"{cold[len(cold) // 2]:.2f}"})
        shutil.rmtree(out, ignore_errors=True)
        serial = median_seconds(
            [mcpgen, "generate", "-q", "--jobs", "1", "--schema-dir", "schema", "--out", str(out)], 1
        )
        rows.append({"case": "both versions, cold, one process", "seconds": f"{serial:.2f}"})
        warm = median_seconds([mcpgen, "generate", "-q", "--schema-dir", "schema", "--out", str(out)], RUNS)
        rows.append({"case": "both versions, nothing changed", "seconds": f"{warm:.2f}"})
    save("generate", rows)
    print(table(rows, ["case", "seconds"]))


if __name__ == "__main__":
    main()
