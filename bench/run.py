"""Run benchmarks several times and write one markdown report: each figure as the range over the
runs, with the machine, the package versions and, on every row, the command that measures it.

    python bench/run.py [--runs 3] [--out bench/results/report.md] [BENCHMARK ...]

A BENCHMARK is a script's name without `bench_` and `.py` (`roundtrip`, `http`...), with options
for it in the same (quoted) argument: `"http --stacks h11 --seconds 3"`. Without any: the runtime
comparisons (roundtrip, instructions, memory, mrtr, http, http_client). The runs go round the
benchmarks in turn (run 1 of each, then run 2 of each...), so a slow patch of a shared machine
spreads over all of them. Instruction counts (callgrind) do not move between runs: `instructions`
runs once.

Every figure of a cell becomes "least-most" over the runs (the text around the numbers is the
same in every run); a cell whose text differs between runs lists each run's text.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _util import RESULTS, ROOT, child_env, machine, versions

HERE = Path(__file__).resolve().parent
DEFAULT = ["roundtrip", "instructions", "memory", "mrtr", "http", "http_client"]
ONCE = {"instructions"}  # deterministic
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def run_once(name: str, args: list[str]) -> list[dict[str, Any]]:
    """Run one benchmark script; the tables of the result files it wrote."""
    script = HERE / f"bench_{name}.py"
    if not script.is_file():
        raise SystemExit(f"no benchmark {script.name}")
    started = time.time()
    print(f"$ python bench/{script.name} {' '.join(args)}".rstrip(), flush=True)
    subprocess.run([sys.executable, str(script), *args], cwd=ROOT, env=child_env(), check=True)
    return read_tables([p for p in RESULTS.glob("*.json") if p.stat().st_mtime >= started], script.name, args)


def read_tables(written: list[Path], script: str, args: list[str]) -> list[dict[str, Any]]:
    tables = []
    for path in sorted(written):
        document = json.loads(path.read_text())
        if "tables" in document:
            tables += document["tables"]
        else:  # a benchmark that writes one list of rows
            rows = document["rows"]
            tables.append(
                {
                    "title": path.stem,
                    "keys": [next(iter(rows[0]))],
                    "columns": list(rows[0]),
                    "rows": rows,
                    "command": " ".join(["python", f"bench/{script}", *args]),
                }
            )
    return tables


def to_float(text: str) -> float:
    return float(text.replace(",", ""))


def merge(values: list[str]) -> str:
    """One cell from each run's text: every number as its range."""
    if len(set(values)) == 1:
        return values[0]
    texts = [NUMBER.split(v) for v in values]
    if any(t != texts[0] for t in texts):
        return " / ".join(dict.fromkeys(values))
    numbers = [NUMBER.findall(v) for v in values]
    out = [texts[0][0]]
    for i, column in enumerate(zip(*numbers, strict=True)):
        low, high = min(column, key=to_float), max(column, key=to_float)
        out += [low if to_float(low) == to_float(high) else f"{low}-{high}", texts[0][i + 1]]
    return "".join(out)


def merge_tables(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The tables of several runs of one benchmark, each cell merged over the runs."""
    merged: dict[str, dict[str, Any]] = {}
    for tables in runs:
        for table in tables:
            into = merged.setdefault(table["title"], {**table, "cells": {}, "order": []})
            for row in table["rows"]:
                key = tuple(row.get(k, "") for k in table["keys"])
                if key not in into["cells"]:
                    into["cells"][key] = {"row": row, "values": []}
                    into["order"].append(key)
                into["cells"][key]["values"].append(row)
    out = []
    for table in merged.values():
        rows = []
        for key in table["order"]:
            seen = table["cells"][key]["values"]
            row = {c: merge([str(r.get(c, "")) for r in seen]) for c in table["columns"]}
            row["runs"] = str(len(seen))
            row["command"] = table["cells"][key]["row"].get("command", table.get("command", ""))
            rows.append(row)
        out.append({**table, "rows": rows})
    return out


def markdown_table(table: dict[str, Any]) -> str:
    columns = [*table["columns"], "runs", "command"]

    def cell(row: dict[str, Any], column: str) -> str:
        value = str(row.get(column, "")).replace("|", "\\|")
        return f"`{value}`" if column == "command" and value else value

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row, c) for c in columns) + " |" for row in table["rows"]]
    return "\n".join(lines)


def report(results: dict[str, list[dict[str, Any]]], runs: int, start: dict[str, Any]) -> str:
    end = machine()
    lines = [
        "# Benchmark results",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- command: `python bench/run.py {shlex.join(sys.argv[1:])}`",
        f"- runs: {runs} per benchmark (instructions: 1, the counts do not move); ranges are least-most over the runs",
        f"- machine: {start['cpu']}, {start['cpus']} CPUs, {start['platform']}, Python {start['python']}",
        f"- load average at the start / end: {start['load average']} / {end['load average']}",
        "- versions: " + ", ".join(f"{name} {version}" for name, version in versions().items()),
    ]
    for tables in results.values():
        for table in tables:
            lines += ["", f"## {table['title']}", ""]
            lines += [f"- {note}" for note in table.get("notes", ())]
            lines += ["", markdown_table(table)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("benchmarks", nargs="*", default=DEFAULT)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "report.md")
    parser.add_argument(
        "--saved", action="append", default=[], metavar="FILE", help="also report a result file saved before"
    )
    options = parser.parse_args()
    plan = [shlex.split(b) for b in options.benchmarks]
    start = machine()
    collected: dict[str, list[list[dict[str, Any]]]] = {" ".join(p): [] for p in plan}
    for run in range(options.runs):
        for name, *args in plan:
            if run > 0 and name in ONCE:
                continue
            print(f"-- run {run + 1}/{options.runs}: {name}", flush=True)
            collected[" ".join([name, *args])].append(run_once(name, args))
    for saved in options.saved:
        collected[saved] = [read_tables([Path(saved)], Path(saved).stem, [])]
    results = {name: merge_tables(runs) for name, runs in collected.items()}
    text = report(results, options.runs, start)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text)
    print(text)
    print(f"written to {options.out}")


if __name__ == "__main__":
    main()
