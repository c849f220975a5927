"""The `mcpgen` command: sync, generate, methods, diff (plus commands other packages register).

Other parts of mcpgen (the runtime's `inspect` and `call`) add commands through the
`mcpgen.commands` entry-point group, so the generator never imports them.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from .errors import GenerationError, PinError
from .versioning import version_key

CODEGEN_DIR = Path(__file__).parent
REPO_SCHEMA_DIR = CODEGEN_DIR.parent / "schema"
DATA_MARKER = "fixes.toml"


def _default_schema_dir() -> Path:
    env = os.environ.get("MCPGEN_SCHEMA_DIR")
    if env:
        return Path(env)
    local = Path("schema")
    if (local / "versions.toml").is_file():
        return local
    return REPO_SCHEMA_DIR


def _data_dir(schema_dir: Path, explicit: Path | None) -> Path:
    """Fix rules and table data: --data-dir, else the schema folder if it has them, else the
    project's `schema/` (beside `codegen/` in a checkout and in an installed wheel)."""
    for candidate in (explicit, schema_dir, REPO_SCHEMA_DIR):
        if candidate is not None and (candidate / DATA_MARKER).is_file():
            return candidate
    if explicit is not None:
        raise GenerationError(f"{explicit} has no {DATA_MARKER}: it is not an mcpgen data folder")
    raise GenerationError(f"no data folder with {DATA_MARKER} found; pass --data-dir")


def _default_out(schema_dir: Path) -> Path:
    return schema_dir.resolve().parent / "generated"


def _fail(exc: Exception) -> None:
    raise click.ClickException(str(exc))


class _Group(click.Group):
    """A group that also offers the commands registered under the `mcpgen.commands` entry points."""

    def _plugins(self) -> dict[str, Any]:
        try:
            return {ep.name: ep for ep in metadata.entry_points(group="mcpgen.commands")}
        except Exception:  # a broken plugin must not break the generator
            return {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._plugins()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        ep = self._plugins().get(cmd_name)
        if ep is None:
            return None
        command = ep.load()
        return command if isinstance(command, click.Command) else None


@click.group(cls=_Group)
def main() -> None:
    """Generated, typed MCP messages and dispatch tables, and a runtime that speaks them."""


schema_dir_option = click.option(
    "--schema-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder with <version>/schema.json (default: ./schema, or $MCPGEN_SCHEMA_DIR).",
)


@main.command()
@click.option(
    "--from",
    "source",
    envvar="MCPGEN_SCHEMA_SOURCE",
    required=True,
    help="A folder or base URL laid out as <source>/<version>/schema.json ($MCPGEN_SCHEMA_SOURCE).",
)
@schema_dir_option
@click.option("--version", "versions", multiple=True, help="Only this version (repeatable); default: every pin.")
@click.option("--update-pins", is_flag=True, help="Record the hash the source serves now (after review).")
def sync(source: str, schema_dir: Path | None, versions: tuple[str, ...], update_pins: bool) -> None:
    """Copy pinned schema files into the schema folder, refusing any whose sha256 differs from its pin."""
    from .sync import sync as do_sync

    root = schema_dir or _default_schema_dir()
    try:
        results = do_sync(source, root, list(versions) or None, update_pins=update_pins)
    except (PinError, GenerationError) as exc:
        _fail(exc)
    for r in results:
        extra = f", {r.examples} examples" if r.examples else ""
        click.echo(f"{r.version}: {r.status} (sha256 {r.sha256[:12]}{extra}) -> {root / r.version / 'schema.json'}")


def _versions_in(schema_dir: Path) -> list[str]:
    from .sync import read_pins

    if (schema_dir / "versions.toml").is_file():
        return [p.version for p in read_pins(schema_dir)]
    if not schema_dir.is_dir():
        raise GenerationError(f"schema folder {schema_dir} does not exist")
    return sorted(
        p.name for p in schema_dir.iterdir() if version_key(p.name) is not None and (p / "schema.json").is_file()
    )


@main.command()
@schema_dir_option
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None, help="Output folder.")
@click.option("--version", "versions", multiple=True, help="Generate this version (repeatable); default: all.")
@click.option(
    "--data-dir", type=click.Path(path_type=Path, file_okay=False), default=None, help="Fix rules and table data."
)
@click.option("--force", is_flag=True, help="Regenerate even when nothing changed.")
@click.option("--jobs", type=int, default=None, help="Worker processes (default: one per CPU).")
@click.option("--no-pin-check", is_flag=True, help="Generate even from files that differ from their pins.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary line.")
def generate(
    schema_dir: Path | None,
    out: Path | None,
    versions: tuple[str, ...],
    data_dir: Path | None,
    force: bool,
    jobs: int | None,
    no_pin_check: bool,
    quiet: bool,
) -> None:
    """Generate models and dispatch tables for every pinned version (or the --version ones)."""
    from .generate import generate as do_generate
    from .sync import read_pins

    root = schema_dir or _default_schema_dir()
    try:
        wanted = list(versions) or _versions_in(root)
        if not wanted:
            raise GenerationError(f"no versions found in {root}")
        pins = {}
        if not no_pin_check and (root / "versions.toml").is_file():
            pins = {p.version: p.sha256 for p in read_pins(root)}
        report = do_generate(
            root,
            out or _default_out(root),
            wanted,
            _data_dir(root, data_dir),
            prune=not versions,
            force=force,
            jobs=jobs,
            pins=pins,
        )
    except (PinError, GenerationError) as exc:
        _fail(exc)
    lines = report.lines()
    click.echo("\n".join(lines[-1:] if quiet else lines))


def _protocol(version: str, schema_dir: Path | None, data_dir: Path | None, *, fixes: bool = True) -> Any:
    from .generate import load_protocol

    root = schema_dir or _default_schema_dir()
    return load_protocol(root, version, _data_dir(root, data_dir), fixes=fixes)


@main.command()
@click.argument("version")
@schema_dir_option
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="A JSON list of objects, one per method.")
def methods(version: str, schema_dir: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Print the dispatch table of VERSION."""
    try:
        protocol = _protocol(version, schema_dir, data_dir)
    except GenerationError as exc:
        _fail(exc)
    rows = protocol.methods_json()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    header = ["method", "kind", "direction", "params", "result", "mrtr", "capability", "deprecated"]
    table = [header]
    for r in rows:
        params = (r["params"] or "-") + ("" if r["params_required"] or not r["params"] else "?")
        cap = f"{r['capability']['side']}:{r['capability']['path']}" if r["capability"] else "-"
        table.append(
            [
                r["method"],
                r["kind"],
                r["direction"],
                params,
                " | ".join(r["result"]) or "-",
                "yes" if r["may_require_input"] else "",
                cap,
                "yes" if r["deprecated"] else "",
            ]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    click.echo(f"MCP {protocol.version} ({protocol.era} era), {len(rows)} methods")
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


@main.command()
@click.argument("old")
@click.argument("new")
@schema_dir_option
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def diff(old: str, new: str, schema_dir: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """What changed from OLD to NEW, as upstream wrote them: methods, defs and fields."""
    from .diff import diff_protocols, format_diff

    try:
        # the protocol as upstream wrote it: the fix rules are mcpgen's, not a change between versions
        result = diff_protocols(
            _protocol(old, schema_dir, data_dir, fixes=False), _protocol(new, schema_dir, data_dir, fixes=False)
        )
    except GenerationError as exc:
        _fail(exc)
    click.echo(json.dumps(result, indent=2) if as_json else format_diff(result))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
