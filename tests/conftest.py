"""Shared test fixtures: where the schemas are and the generated packages; every async test runs on
both anyio backends."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check behaviour, never speed: on a loaded 2-core CI box one example can take
# longer than hypothesis' default 200 ms deadline, which would fail a correct test. No deadline
# for any of them (a test's own @settings still adds its example counts).
settings.register_profile("mcpgen", deadline=None)
settings.load_profile("mcpgen")

REPO = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO / "schema"
VERSIONS = ("2025-11-25", "2026-07-28")

# The tests that press Ctrl-C on a command send SIGINT to a child process. A run started in the
# background of a non-interactive shell (`cmd &`, nohup) ignores SIGINT, and a child inherits an
# ignored signal across exec, so the command would never see it. Handling it here (as an
# interactive run does) gives every child the default disposition.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _recorded_source() -> str | None:
    recorded = REPO / ".schema-source"  # written by .ci/setup
    return recorded.read_text().strip() if recorded.is_file() else None


def schema_source() -> Path:
    """The folder `.ci/run` synced from (`MCPGEN_SCHEMA_SOURCE`, default `../shared/mcp-schema`)."""
    env = os.environ.get("MCPGEN_SCHEMA_SOURCE") or _recorded_source()
    if env and not env.startswith(("http://", "https://")):
        return Path(env)
    return REPO.parent / "shared" / "mcp-schema"


@pytest.fixture(scope="session")
def schema_dir() -> Path:
    for v in VERSIONS:
        if not (SCHEMA_DIR / v / "schema.json").is_file():
            pytest.fail(f"{SCHEMA_DIR / v / 'schema.json'} is missing: run the README's setup command (mcpgen sync)")
    return SCHEMA_DIR


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return SCHEMA_DIR


@pytest.fixture(scope="session")
def future_tree(tmp_path_factory: pytest.TempPathFactory, schema_dir: Path) -> tuple[Path, Path]:
    """A modified copy of the 2026-07-28 schema as a future version (see schema_changes.py),
    generated into a tree of its own: (schema folder, generated package folder)."""
    from mcpgen.codegen.generate import generate
    from support.schema_changes import BASE, FUTURE, make_future_schema_dir

    root = tmp_path_factory.mktemp("spec-change")
    schemas = make_future_schema_dir(root / "schemas", schema_dir)
    out = root / "tree" / "future_mcp"
    generate(schemas, out, [BASE, FUTURE], schema_dir)
    return schemas, out


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
