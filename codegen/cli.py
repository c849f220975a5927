"""The `mcpgen` command: init, sync, generate, methods, diff (plus commands other packages register).

Every folder is the user's project's (see `project.py`), never the installed package. Other parts
of mcpgen (the runtime's `inspect` and `call`) add commands through the `mcpgen.commands`
entry-point group, so this module imports neither the runtime nor the generator toolchain:
`init`, `sync`, `methods` and `diff` work in a runtime-only install, and `generate` says what to
install when the toolchain is missing.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

import click

from .errors import GenerationError, PinError
from .project import DATA_FILES, PACKAGED_DATA, Project, data_dir_for, load_project
from .versioning import version_key

TOOLCHAIN = ("datamodel_code_generator", "black", "jinja2")


def _fail(exc: Exception | str) -> NoReturn:
    raise click.ClickException(str(exc))


def _project() -> Project:
    try:
        return load_project()
    except GenerationError as exc:
        _fail(exc)


def _shown(path: Path) -> str:
    """A path as the user would type it here: relative to the current directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(path)


def _version() -> str:
    try:
        return metadata.version("mcpgen")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


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
@click.version_option(_version(), "--version", prog_name="mcpgen", message="%(prog)s %(version)s")
def main() -> None:
    """Generated, typed MCP messages and dispatch tables, and a runtime that speaks them.

    Folders are the current project's: ./schema and ./generated beside the nearest
    pyproject.toml, or as set under [tool.mcpgen] there (schema-dir, out, data-dir).
    """


schema_dir_option = click.option(
    "--schema-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder with versions.toml and <version>/schema.json (default: the project's schema/, "
    "[tool.mcpgen] schema-dir, or $MCPGEN_SCHEMA_DIR).",
)
data_dir_option = click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Own fix rules and table data (default: the schema folder if it has fixes.toml, else mcpgen's).",
)


# -- init -------------------------------------------------------------------------------------


@main.command()
@schema_dir_option
@click.option("--force", is_flag=True, help="Overwrite an existing versions.toml.")
@click.option("--with-data", is_flag=True, help="Also copy mcpgen's data files (fix rules, gates, ...) to edit them.")
def init(schema_dir: Path | None, force: bool, with_data: bool) -> None:
    """Start a project: write schema/versions.toml with the pins this mcpgen release knows."""
    from .sync import PINS_FILE, read_extension_pins, read_pins, write_pins

    root = schema_dir or _project().schema_dir
    target = root / PINS_FILE
    if target.exists() and not force:
        _fail(f"{_shown(target)} already exists (--force overwrites it)")
    try:
        pins = read_pins(PACKAGED_DATA)
        extensions = read_extension_pins(PACKAGED_DATA)
        root.mkdir(parents=True, exist_ok=True)
        write_pins(root, pins, extensions)
    except PinError as exc:
        _fail(exc)
    except OSError as exc:
        _fail(f"cannot write {_shown(target)}: {exc.strerror or exc}")
    pinned = ", ".join(p.version for p in pins)
    if extensions:
        pinned += f"; extensions {', '.join(e.id for e in extensions)}"
    click.echo(f"wrote {_shown(target)}: {pinned}")
    if with_data:
        for name in DATA_FILES:
            (root / name).write_bytes((PACKAGED_DATA / name).read_bytes())
        click.echo(f"copied {', '.join(DATA_FILES)} to {_shown(root)} (they now replace mcpgen's)")
    options = "" if schema_dir is None else f" --schema-dir {shlex.quote(_shown(root))}"
    click.echo(f"next: mcpgen sync{options} && mcpgen generate{options}")


# -- sync -------------------------------------------------------------------------------------


@main.command()
@click.option(
    "--from",
    "source",
    envvar="MCPGEN_SCHEMA_SOURCE",
    default=None,
    help="A folder or base URL laid out as <source>/<version>/schema.json ($MCPGEN_SCHEMA_SOURCE). "
    "Default: each pin's repository at its commit.",
)
@click.option(
    "--ext-from",
    "ext_source",
    envvar="MCPGEN_EXT_SOURCE",
    default=None,
    help="A folder or base URL laid out as <source>/<name>/<release>/schema.json, for the pinned extensions "
    "($MCPGEN_EXT_SOURCE). Default: <--from>/extensions, else each pin's repository at its commit.",
)
@schema_dir_option
@click.option("--version", "versions", multiple=True, help="Only this version (repeatable); default: every pin.")
@click.option(
    "--extension", "extensions", multiple=True, help="Only this extension, by id (repeatable); default: every pin."
)
@click.option("--update-pins", is_flag=True, help="Record the hash the source serves now (after review).")
@click.option(
    "--raw-base",
    envvar="MCPGEN_RAW_BASE",
    default=None,
    help="Where pinned repositories are served as <owner>/<repo>/<commit>/<path> "
    "(default https://raw.githubusercontent.com; $MCPGEN_RAW_BASE).",
)
def sync(  # noqa: PLR0913 - one parameter per command-line option
    source: str | None,
    ext_source: str | None,
    schema_dir: Path | None,
    versions: tuple[str, ...],
    extensions: tuple[str, ...],
    update_pins: bool,
    raw_base: str | None,
) -> None:
    """Fetch the pinned schema files (protocol versions and extensions) into the schema folder,
    refusing any whose sha256 differs from its pin."""
    from .sync import RAW_BASE
    from .sync import sync as do_sync

    if source is not None and not source.strip():
        raise click.BadParameter(
            "is empty: give a folder or base URL laid out as SOURCE/<version>/schema.json, "
            "or leave it out to fetch each pin from its repository",
            param_hint="'--from' / MCPGEN_SCHEMA_SOURCE",
        )
    root = schema_dir or _project().schema_dir
    base = ["mcpgen", "sync"]
    if source:
        base += ["--from", source]
    if ext_source:
        base += ["--ext-from", ext_source]
    base += ["--schema-dir", _shown(root)]
    if raw_base:
        base += ["--raw-base", raw_base]

    def repin(version: str) -> str:
        which = "--version" if version_key(version) is not None else "--extension"
        return shlex.join([*base, which, version, "--update-pins"])

    def review(pinned: Path, fresh: Path) -> str:
        return shlex.join(["mcpgen", "diff", _shown(pinned), _shown(fresh)])

    try:
        results = do_sync(
            source,
            root,
            list(versions) or None,
            extensions=list(extensions) or None,
            ext_source=ext_source,
            update_pins=update_pins,
            raw_base=raw_base or RAW_BASE,
            repin_hint=repin,
            diff_hint=review,
        )
    except (PinError, GenerationError) as exc:
        _fail(exc)
    for r in results:
        extra = f", {r.examples} examples" if r.examples else ""
        where = _shown(r.target or root / r.version / "schema.json")
        click.echo(f"{r.version}: {r.status} (sha256 {r.sha256[:12]}{extra}) -> {where}")


# -- generate ---------------------------------------------------------------------------------


def _versions_in(schema_dir: Path) -> list[str]:
    if not schema_dir.is_dir():
        raise GenerationError(f"schema folder {schema_dir} does not exist")
    return sorted(
        p.name for p in schema_dir.iterdir() if version_key(p.name) is not None and (p / "schema.json").is_file()
    )


def _require_toolchain() -> None:
    missing = [name for name in TOOLCHAIN if importlib.util.find_spec(name) is None]
    if missing:
        _fail(f"the generator toolchain is not installed (no {', '.join(missing)}): pip install 'mcpgen[codegen]'")


@main.command()
@schema_dir_option
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None, help="Output folder.")
@click.option("--version", "versions", multiple=True, help="Generate this version (repeatable); default: every pin.")
@data_dir_option
@click.option("--force", is_flag=True, help="Regenerate even when nothing changed.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per CPU).")
@click.option("--no-pin-check", is_flag=True, help="Generate from schema files without checking them against pins.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
@click.option(
    "--verbose", "-v", is_flag=True, help="Also say where each schema fix applied, or that it matched nothing."
)
def generate(  # noqa: PLR0913 - one parameter per command-line option
    schema_dir: Path | None,
    out: Path | None,
    versions: tuple[str, ...],
    data_dir: Path | None,
    force: bool,
    jobs: int | None,
    no_pin_check: bool,
    quiet: bool,
    verbose: bool,
) -> None:
    """Generate models and dispatch tables for every pinned version (or the --version ones).

    Says on stderr as each version is done (with -v, also where each schema fix applied or that
    it matched nothing, which a fix meant for other versions does); says nothing when nothing
    changed.
    """
    _require_toolchain()
    from .generate import generate as do_generate
    from .sync import PINS_FILE, ExtensionPin, read_extension_pins, read_pins

    project = _project()
    root = schema_dir or project.schema_dir
    shown = _shown(root)
    repin = shlex.join(["mcpgen", "sync", "--from", shown, "--schema-dir", shown, "WHICH", "VERSION"])
    repin = repin.replace("WHICH", "{which}").replace("VERSION", "{version}") + " --update-pins"
    try:
        pins: dict[str, str] | None = None
        extensions: list[ExtensionPin] = []
        if (root / PINS_FILE).is_file():
            pinned = read_pins(root)
            extensions = read_extension_pins(root)
            wanted = list(versions) or [p.version for p in pinned]
            pins = None if no_pin_check else {p.version: p.sha256 for p in pinned}
        elif no_pin_check:
            wanted = list(versions) or _versions_in(root)
        else:
            init = "mcpgen init" + ("" if schema_dir is None else f" --schema-dir {shlex.quote(shown)}")
            raise GenerationError(
                f"no pins at {_shown(root / PINS_FILE)}: run `{init}` (or pass --no-pin-check to generate "
                "unpinned schema files)"
            )
        if not wanted:
            raise GenerationError(f"no versions found in {shown}")
        report = do_generate(
            root,
            out or project.out,
            wanted,
            data_dir_for(root, data_dir, project.data_dir),
            extensions=extensions,
            prune=not versions,
            force=force,
            jobs=jobs,
            pins=pins,
            repin_hint=repin,
            progress=None if quiet else _say,
            verbose=verbose,
        )
    except (PinError, GenerationError) as exc:
        _fail(exc)
    if quiet:
        return
    if report.changed:
        for v in report.removed:
            _say(f"removed {v} (no longer pinned)")
        _say(report.summary())


def _say(line: str) -> None:
    """Progress and notes go to stderr: stdout is for what a command was asked to print."""
    click.echo(line, err=True)


# -- methods and diff -------------------------------------------------------------------------


def _newest_applying(root: Path, pin: Any, data: Path, as_version: str | None) -> str:
    """The core version to read an extension on: `--as-version`, else the newest pinned (or, with
    no pins, synced) version it applies to."""
    from .generate import extension_versions
    from .sync import PINS_FILE, read_pins

    known = [p.version for p in read_pins(root)] if (root / PINS_FILE).is_file() else _versions_in(root)
    applies = extension_versions(pin, [*known, *([as_version] if as_version else [])], data)
    if as_version is not None:
        if as_version not in applies:
            raise GenerationError(f"extension {pin.id} does not apply to {as_version} (extensions.toml)")
        return as_version
    if not applies:
        raise GenerationError(f"extension {pin.id} applies to none of the versions in {_shown(root)}")
    return applies[-1]


def _extension_pin(root: Path, target: str, path: Path, extension: str | None) -> Any:
    """The pinned extension a target names: by id, by `--extension`, or as a file in its synced
    folder (or beside it: the `schema.json.new` a refused sync keeps); None for a core target."""
    from .sync import PINS_FILE, ExtensionPin, extension_file, read_extension_pins

    pins = read_extension_pins(root) if (root / PINS_FILE).is_file() else []
    wanted = extension or (target if not path.is_file() else None)
    for pin in pins:
        if pin.id == wanted:
            return pin
        if wanted is None and path.is_file() and path.resolve().parent == extension_file(root, pin).parent.resolve():
            return pin
    if extension is not None:  # a file read as an extension that is not pinned (yet)
        return ExtensionPin(id=extension, name="unpinned", release=path.resolve().parent.name, sha256="")
    return None


def _names_extension(target: str, schema_dir: Path | None, extension: str | None) -> bool:
    root = schema_dir or _project().schema_dir
    path = Path(target)
    if version_key(target) is not None and not path.is_file() and extension is None:
        return False
    return _extension_pin(root, target, path, extension) is not None


def _load(  # noqa: PLR0913 - the target and the command's options
    target: str,
    schema_dir: Path | None,
    data_dir: Path | None,
    as_version: str | None,
    *,
    fixes: bool,
    extension: str | None = None,
) -> Any:
    """The IR of a version of the schema folder, of a pinned extension (by id, on the newest
    version it applies to, or --as-version), or of a schema file (its version is the name of its
    folder, or --as-version; an extension's file is one in its synced folder, or --extension)."""
    from .generate import load_extension, load_protocol, load_protocol_file

    project = _project()
    root = schema_dir or project.schema_dir
    data = data_dir_for(root, data_dir, project.data_dir)
    path = Path(target)
    if version_key(target) is not None and not path.is_file() and extension is None:
        return load_protocol(root, target, data, fixes=fixes)
    pin = _extension_pin(root, target, path, extension)
    if pin is not None:
        on = _newest_applying(root, pin, data, as_version)
        return load_extension(root, pin, on, data, path=path if path.is_file() else None, fixes=fixes)
    if not path.is_file():
        raise GenerationError(f"{target} is neither a version in {_shown(root)}, a pinned extension nor a schema file")
    version = as_version or path.resolve().parent.name
    if version_key(version) is None:
        raise GenerationError(
            f"cannot tell which protocol version {target} is (its folder is not named YYYY-MM-DD): pass --as-version"
            " (or --extension ID for an extension's schema)"
        )
    return load_protocol_file(path, version, data, fixes=fixes)


as_version_option = click.option(
    "--as-version",
    default=None,
    help="The protocol version of a schema FILE whose folder is not named for it; for an extension, "
    "the version to read it on (default: the newest pinned one it applies to).",
)
extension_option = click.option(
    "--extension", default=None, metavar="ID", help="Read a schema FILE as this extension (by its id)."
)


def _extension_json(ext: Any) -> dict[str, Any]:
    return {
        "extension": ext.ext_id,
        "release": ext.release,
        "version": ext.version,
        "capability": list(ext.capability),
        "gate": ext.gate_side,
        "settings": ext.settings,
        "methods": ext.methods_json(),
        "augments": list(ext.augments),
        "removes": list(ext.removes),
        "reused": list(ext.reused),
        "differs": list(ext.differs),
        "differs_through": list(ext.differs_through),
    }


@main.command()
@click.argument("target", metavar="VERSION|EXTENSION|FILE")
@schema_dir_option
@data_dir_option
@as_version_option
@extension_option
@click.option(
    "--json", "as_json", is_flag=True, help="A JSON list of objects, one per method (an object, for an extension)."
)
def methods(  # noqa: PLR0913 - one parameter per command-line option
    target: str,
    schema_dir: Path | None,
    data_dir: Path | None,
    as_version: str | None,
    extension: str | None,
    as_json: bool,
) -> None:
    """Print the dispatch table of a version (of the schema folder), of a pinned extension (by
    its id) or of a schema file."""
    from .extension import ExtensionProtocol

    try:
        protocol = _load(target, schema_dir, data_dir, as_version, fixes=True, extension=extension)
    except (GenerationError, PinError) as exc:
        _fail(exc)
    is_extension = isinstance(protocol, ExtensionProtocol)
    rows = protocol.methods_json()
    if as_json:
        click.echo(json.dumps(_extension_json(protocol) if is_extension else rows, indent=2))
        return
    header = ["method", "kind", "direction", "params", "result", "mrtr", "capability", "deprecated", "mcp-name"]
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
                r["name_param"] or "",
            ]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    if is_extension:
        click.echo(f"MCP extension {protocol.label} ({protocol.era} era), {len(rows)} methods")
    else:
        click.echo(f"MCP {protocol.version} ({protocol.era} era), {len(rows)} methods")
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    if is_extension:
        for line in protocol.report_lines():
            click.echo(line)


@main.command()
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@schema_dir_option
@data_dir_option
@as_version_option
@extension_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--exit-code", is_flag=True, help="Exit with 1 when the protocol differs, 0 when it does not (for CI).")
def diff(  # noqa: PLR0913 - one parameter per command-line option
    old: str,
    new: str,
    schema_dir: Path | None,
    data_dir: Path | None,
    as_version: str | None,
    extension: str | None,
    as_json: bool,
    exit_code: bool,
) -> None:
    """What changed from OLD to NEW, as upstream wrote them: methods, defs and fields.

    OLD and NEW are versions of the schema folder or any two schema files (also two copies of
    one version, e.g. the pinned file and the `schema.json.new` a refused sync keeps), two
    schema files of one extension (--extension ID, unless they are in its synced folder), or a
    version and a pinned extension: what the extension adds to, changes in and removes from that
    version, and which of the defs it repeats differ.
    """
    from .diff import diff_extension, diff_protocols, format_diff, has_changes
    from .extension import ExtensionProtocol

    try:
        # the protocol as upstream wrote it: the fix rules are mcpgen's, not a change between versions
        a = _load(old, schema_dir, data_dir, as_version, fixes=False, extension=extension)
        on = as_version
        if not isinstance(a, ExtensionProtocol) and _names_extension(new, schema_dir, extension):
            on = as_version or a.version  # an extension is read on the version it is compared with
        b = _load(new, schema_dir, data_dir, on, fixes=False, extension=extension)
    except (GenerationError, PinError) as exc:
        _fail(exc)
    if isinstance(b, ExtensionProtocol) and not isinstance(a, ExtensionProtocol):
        if b.version != a.version:
            _fail(f"{b.label} is read on {b.version}, not {a.version}: compare it with the version it is read on")
        result = diff_extension(a, b)
    elif isinstance(a, ExtensionProtocol) and not isinstance(b, ExtensionProtocol):
        _fail("compare an extension with a version as `mcpgen diff VERSION EXTENSION` (the version first)")
    else:
        result = diff_protocols(a, b)
    click.echo(json.dumps(result, indent=2) if as_json else format_diff(result))
    if exit_code and has_changes(result):
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
