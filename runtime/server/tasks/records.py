"""A task as the server keeps it, and as each era shows it. Pure data: no I/O.

A `TaskRecord` is era-neutral: its status, its times, who may see it, the outcome (the result of
the request it stands for, or the JSON-RPC error it ended with), and the input it waits for. The
records are what a `TaskStore` keeps (as JSON, so any process of a deployment can read them);
`modern_view` and `legacy_view` are the shapes the two designs put on the wire:

- the tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28 on): a `DetailedTask`
  (`ttlMs`, `pollIntervalMs`, the outstanding `inputRequests`, the inlined `result` or `error`);
  a tool result with `isError: true` is `completed` (`failed` is for JSON-RPC errors only);
- the experimental tasks of 2025-11-25: a `Task` (`ttl`, `pollInterval`); the result comes from
  `tasks/result`; a tool result with `isError: true` makes the task `failed`.

Input keys are unique over a task's lifetime: a key asked once is never asked again (a handler
that asks `confirm` in two rounds gets `confirm` and then `confirm~2` on the wire), so an answer
always refers to the request the client saw.
"""

from __future__ import annotations

import copy
import datetime
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED = "working", "input_required", "completed", "failed", "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})


def iso(timestamp: float) -> str:
    """Seconds since the epoch as an ISO 8601 UTC timestamp (`2026-01-01T10:30:00.000Z`)."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task, as every process of a deployment sees it (see the module docstring)."""

    task_id: str
    status: str
    created_at: float  # seconds since the epoch (wall clock: processes and restarts agree on it)
    updated_at: float
    ttl_ms: int | None  # from creation; None: kept until deleted
    poll_interval_ms: int | None
    version: str  # the protocol version of the request that created it
    method: str  # the request it stands for (`tools/call`)
    owner: str | None = None  # the principal that created it (None: an unauthenticated caller)
    scope: str | None = None  # the handshake-era session that created it, for `tasks/list` without a principal
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    requests: dict[str, Any] = field(default_factory=dict)  # outstanding input requests, by wire key
    schemas: dict[str, Any] = field(default_factory=dict)  # the elicitation schema of each outstanding key
    answers: dict[str, Any] = field(default_factory=dict)  # answers to outstanding keys, not yet taken
    issued: list[str] = field(default_factory=list)  # every key ever asked (never asked again)

    # -- state ---------------------------------------------------------------------------------

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float | None:
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    def expired(self, now: float) -> bool:
        expires = self.expires_at
        return expires is not None and now >= expires

    def pending(self) -> dict[str, Any]:
        """The input requests still waiting for an answer."""
        return {key: request for key, request in self.requests.items() if key not in self.answers}

    def visible_to(self, owner: str | None) -> bool:
        """May the caller `owner` (a principal, or None) see this task?"""
        return self.owner == owner

    def unique_key(self, key: str) -> str:
        """`key`, or `key~N` for the smallest N it was never asked as."""
        if key not in self.issued:
            return key
        n = 2
        while f"{key}~{n}" in self.issued:
            n += 1
        return f"{key}~{n}"

    # -- storage -------------------------------------------------------------------------------

    def copy(self) -> TaskRecord:
        return copy.deepcopy(self)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, data: str | bytes) -> TaskRecord:
        raw = json.loads(data)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


def _times(record: TaskRecord) -> dict[str, Any]:
    return {"createdAt": iso(record.created_at), "lastUpdatedAt": iso(record.updated_at)}


def modern_status(record: TaskRecord) -> str:
    """The status the extension shows: `input_required` only while some input is still unanswered."""
    if record.status == INPUT_REQUIRED and not record.pending():
        return WORKING  # every answer is in; the task resumes
    return record.status


def modern_view(record: TaskRecord) -> dict[str, Any]:
    """The extension's `DetailedTask` of a record (what `tasks/get` and `notifications/tasks` carry)."""
    status = modern_status(record)
    view: dict[str, Any] = {"taskId": record.task_id, "status": status, **_times(record), "ttlMs": record.ttl_ms}
    if record.poll_interval_ms is not None:
        view["pollIntervalMs"] = record.poll_interval_ms
    if record.status_message is not None:
        view["statusMessage"] = record.status_message
    if status == INPUT_REQUIRED:
        view["inputRequests"] = record.pending()
    elif status == COMPLETED and record.result is not None:
        view["result"] = record.result
    elif status == FAILED and record.error is not None:
        view["error"] = record.error
    return view


def modern_created(record: TaskRecord) -> dict[str, Any]:
    """The extension's `CreateTaskResult`: the task's seed state, nothing of its outcome."""
    view: dict[str, Any] = {"resultType": "task", "taskId": record.task_id, "status": modern_status(record)}
    view.update(_times(record), ttlMs=record.ttl_ms)
    if record.poll_interval_ms is not None:
        view["pollIntervalMs"] = record.poll_interval_ms
    if record.status_message is not None:
        view["statusMessage"] = record.status_message
    return view


def legacy_status(record: TaskRecord) -> str:
    """The status 2025-11-25 shows: a tool result with `isError: true` is `failed`."""
    if record.status == COMPLETED and isinstance(record.result, dict) and record.result.get("isError") is True:
        return FAILED
    return modern_status(record)


def legacy_view(record: TaskRecord) -> dict[str, Any]:
    """2025-11-25's `Task` of a record (`tasks/get`, `tasks/list`, `tasks/cancel`, the status notification)."""
    view: dict[str, Any] = {"taskId": record.task_id, "status": legacy_status(record), **_times(record)}
    view["ttl"] = record.ttl_ms
    if record.poll_interval_ms is not None:
        view["pollInterval"] = record.poll_interval_ms
    if record.status_message is not None:
        view["statusMessage"] = record.status_message
    return view
