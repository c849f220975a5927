"""Time `mcpgen generate` for both pinned versions against raw datamodel-codegen with black.

Cases, each a whole command (interpreter start included), timed in rounds that alternate the
commands so that load on the machine falls on each alike; medians of the rounds:

- raw: `datamodel-codegen --formatters black` on each pinned schema, one after the other (models
  only, datamodel-codegen's own options: what a project would get without mcpgen);
- `mcpgen generate --force` (every version rebuilt, one worker process per CPU);
- `mcpgen generate --force --jobs 1` (one process, the same work as raw plus mcpgen's own:
  schema fixes, normalisation, dispatch tables, the version-independent types);
- `mcpgen generate` when nothing changed.

The ratio is mcpgen's time over raw's: at most 1.0 means mcpgen is no slower. Wall time and CPU
time (user + system of the command and its worker processes) are both reported: on a shared,
loaded machine the wall time of the parallel case depends on what else runs, the CPU time much
less (parallel workers each pay the toolchain's start-up, so their CPU time is the higher one).
"""

from __future__ import annotations

import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _util import ROOT, save, table

ROUNDS = 5


CPU: dict[str, list[float]] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def seconds(cmd: list[str], cpu: list[float] | None = None) -> float:
    """Wall seconds of `cmd`; its CPU seconds (with its children) are appended to `cpu`."""
    before = _children_cpu()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    wall = time.perf_counter() - start
    if cpu is not None:
        cpu.append(_children_cpu() - before)
    return wall


def pinned_versions() -> list[str]:
    lines = (ROOT / "schema" / "versions.toml").read_text().splitlines()
    return [line.split('"')[1] for line in lines if line.startswith("version = ")]


def main() -> None:
    bindir = Path(sys.executable).parent
    mcpgen, dmcg = str(bindir / "mcpgen"), str(bindir / "datamodel-codegen")
    versions = pinned_versions()
    times: dict[str, list[float]] = {"raw": [], "parallel": [], "serial": [], "warm": []}
    cpu: dict[str, list[float]] = {case: [] for case in times}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gen"
        raw_out = Path(tmp) / "raw"
        raw_out.mkdir()

        def raw() -> float:
            total = 0.0
            spent: list[float] = []
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
                    ],
                    spent,
                )
            cpu["raw"].append(sum(spent))
            return total

        generate = [mcpgen, "generate", "-q", "--schema-dir", "schema", "--out", str(out)]
        for _ in range(ROUNDS):
            times["raw"].append(raw())
            times["parallel"].append(seconds([*generate, "--force"], cpu["parallel"]))
            times["serial"].append(seconds([*generate, "--force", "--jobs", "1"], cpu["serial"]))
            times["warm"].append(seconds(generate, cpu["warm"]))
        shutil.rmtree(out, ignore_errors=True)

    median = {case: statistics.median(values) for case, values in times.items()}
    used = {case: statistics.median(values) for case, values in cpu.items()}
    names = {
        "raw": "raw datamodel-codegen + black, both schemas",
        "parallel": "mcpgen generate --force (parallel)",
        "serial": "mcpgen generate --force --jobs 1",
        "warm": "mcpgen generate, nothing changed",
    }
    rows = [
        {
            "case": names[case],
            "wall s": f"{median[case]:.2f}",
            "wall vs raw": f"{median[case] / median['raw']:.2f}",
            "cpu s": f"{used[case]:.2f}",
            "cpu vs raw": f"{used[case] / used['raw']:.2f}",
        }
        for case in names
    ]
    save("generate", rows)
    print(f"{ROUNDS} alternating rounds, medians; versions {', '.join(versions)}")
    print(table(rows, ["case", "wall s", "wall vs raw", "cpu s", "cpu vs raw"]))


if __name__ == "__main__":
    main()
