"""A freshly started HTTP server answers its first requests without building validators.

The generated models are deferred (`defer_build`): a model's validator is built when it is first
used. Built inside a first request, it takes that request tens of milliseconds on a quiet machine
(a hundred for `tools/call`'s result union) and several times that on a loaded one, which a
peer's timeout counts: the conformance harness gives its stateless scenario's first
`tools/call`s 500 and 600 ms, and the two-process leg (two fresh workers, each serving half of
those first requests) failed them under load. The HTTP app builds them while it starts, before
it serves. Checked in a fresh interpreter (this one may have built them in an earlier test), by
what pydantic's schema generator is asked to build while the requests are served.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "tests" / "support" / "cold_start.py"
TARGET = f"{REPO / 'examples' / 'conformance_server.py'}:server"


def test_the_first_requests_after_start_build_no_validator() -> None:
    done = subprocess.run(
        [sys.executable, str(PROBE), TARGET], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    built = json.loads(done.stdout.strip().splitlines()[-1])["built"]
    assert built == [], f"built while serving the first requests: {built}"
