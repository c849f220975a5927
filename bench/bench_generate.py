"""Time `mcpgen generate` for both pinned versions against raw datamodel-codegen with black.

Cases, each a whole command (interpreter start included), timed in rounds that alternate the
commands so that load on the machine falls on each alike; medians of the rounds:

- raw: `datamodel-codegen --formatters black` on each pinned schema, one after the other (models
  only, datamodel-codegen's own options: what a project would get without mcpgen);
- `mcpgen generate --force` (every version rebuilt, one worker process per CPU);
- `mcpgen generate --force --jobs 1` (one process, the same work as raw plus mcpgen's own:
  schema fixes, normalisation, dispatch tables, the version-independent types);
- `mcpgen generate` when nothing changed.

The ratio is mcpgen's time over raw's: at most 1.0 means mcpgen is no slower.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _util import ROOT, save, table

ROUNDS = 5


def seconds(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start


def pinned_versions() -> list[str]:
    lines = (ROOT / "schema" / "versions.toml").read_text().splitlines()
    return [line.split('"')[1] for line in lines if line.startswith("version = ")]


def main() -> None:
    bindir = Path(sys.executable).parent
    mcpgen, dmcg = str(bindir / "mcpgen"), str(bindir / "datamodel-codegen")
    versions = pinned_versions()
    times: dict[str, list[float]] = {"raw": [], "parallel": [], "serial": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gen"
        raw_out = Path(tmp) / "raw"
        raw_out.mkdir()

        def raw() -> float:
            total = 0.0
            for v in versions:
                total += seconds(
                    [
                        dmcg,
                        "--input",
                        f"schema/{v}/schema.json",
                        "--input-file-type",
                        "jsonschema",
                        "--output-model-type",
                        "pydantic_v2.BaseModel",
                        "--formatters",
                        "black",
                        "--output",
                        str(raw_out / f"{v}.py"),
                    ]
                )
            return total

        generate = [mcpgen, "generate", "-q", "--schema-dir", "schema", "--out", str(out)]
        for _ in range(ROUNDS):
            times["raw"].append(raw())
            times["parallel"].append(seconds([*generate, "--force"]))
            times["serial"].append(seconds([*generate, "--force", "--jobs", "1"]))
            times["warm"].append(seconds(generate))
        shutil.rmtree(out, ignore_errors=True)

    median = {case: statistics.median(values) for case, values in times.items()}
    rows = [
        {"case": "raw datamodel-codegen + black, both schemas", "seconds": f"{median['raw']:.2f}", "vs raw": "1.00"},
        {
            "case": "mcpgen generate --force (parallel)",
            "seconds": f"{median['parallel']:.2f}",
            "vs raw": f"{median['parallel'] / median['raw']:.2f}",
        },
        {
            "case": "mcpgen generate --force --jobs 1",
            "seconds": f"{median['serial']:.2f}",
            "vs raw": f"{median['serial'] / median['raw']:.2f}",
        },
        {
            "case": "mcpgen generate, nothing changed",
            "seconds": f"{median['warm']:.2f}",
            "vs raw": f"{median['warm'] / median['raw']:.2f}",
        },
    ]
    save("generate", rows)
    print(f"{ROUNDS} alternating rounds, medians; versions {', '.join(versions)}")
    print(table(rows, ["case", "seconds", "vs raw"]))


if __name__ == "__main__":
    main()
