"""Small helpers shared by the benchmarks: timing, result files, tables."""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def best_rate(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Calls per second, best of `repeat` runs of `number` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, time.perf_counter() - start)
    return number / best


def median_seconds(cmd: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu": model,
        "load average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


DISTRIBUTIONS = (
    "mcpgen", "mcp", "mcp-types", "pydantic", "pydantic-core", "anyio", "httpx", "httpcore", "h11",
    "uvicorn", "starlette", "httptools", "uvloop",
)  # fmt: skip


def versions() -> dict[str, str]:
    """Versions of the packages and native tools the benchmarks use ("-": not installed)."""
    found = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "-"
    for tool, flag in (("wrk", "-v"), ("valgrind", "--version")):
        path = shutil.which(tool)
        if path is None:
            found[tool] = "-"
            continue
        out = subprocess.run([path, flag], capture_output=True, text=True, check=False)
        found[tool] = (out.stdout or out.stderr).split("\n", 1)[0].split(" [", 1)[0].strip()
    return found


def command(*args: str) -> str:
    """How to run the calling benchmark again (from the repository root), with `args`, or with the
    arguments it was given."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    return " ".join(["python", str(shown), *(args if args else sys.argv[1:])])


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a benchmark's child interpreters. Where bytecode is not written
    (PYTHONDONTWRITEBYTECODE), every child would compile its imports again: they are cached under
    bench/results instead (the checkout stays clean), which only shortens start-up."""
    env = {**os.environ, **extra}
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env.setdefault("PYTHONPYCACHEPREFIX", str(RESULTS / "pycache"))
    return env


def save(name: str, rows: list[dict[str, Any]]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2) + "\n")


def save_tables(name: str, tables: list[dict[str, Any]]) -> None:
    """Write bench/results/<name>.json and print each table.

    A table is {"title", "keys", "columns", "rows", "command", "notes"}: `keys` are the columns
    that name a row (the same row in another run has the same keys; `bench/run.py` merges runs into
    ranges by them), a row may carry its own "command" (else the table's), `notes` say what ran.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    document = {"machine": machine(), "versions": versions(), "tables": tables}
    (RESULTS / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n")
    for entry in tables:
        print(f"\n{entry['title']}\n")
        print(table(entry["rows"], entry["columns"]))
        for note in entry.get("notes", ()):
            print(f"- {note}")


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |" for row in cells]
    return "\n".join(lines)
