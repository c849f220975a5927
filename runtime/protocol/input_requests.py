"""Multi-round-trip requests (MRTR): asking the client for input from a handler.

A handler asks for input with `ctx.input_required(key=request, ..., state=...)` (or by raising
or returning `InputRequired`), where each request is built with `elicit`, `elicit_url`,
`sample` or `list_roots` and keyed by a name the handler chooses. The runtime turns that into
an `InputRequiredResult` on a modern request, or into server->client requests on a
handshake-era session, and calls the handler again with the answers
(`ctx.elicitation(key, Model)`, `ctx.input_response(key)`, `ctx.state`). Handler code is
written once for both eras.

`requestState` is sealed (see `state.py`); elicitation schemas and answers follow the rules in
`elicitation.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from .elicitation import apply_elicitation, check_elicitation_schema, schema_of
from .sealing import StateSealer, params_digest

InputRequest = dict[str, Any]  # {"method": ..., "params": {...}}: one input request


class InputRequired(BaseException):
    """A handler's request for input: `requests` (key -> input request) and/or `state`.

    It derives from BaseException so that a tool's own `except Exception:` does not swallow it.
    """

    def __init__(self, requests: Mapping[str, InputRequest] | None = None, state: Any = None) -> None:
        super().__init__("input required")
        self.requests: dict[str, InputRequest] = dict(requests or {})
        self.state = state
        if not self.requests and state is None:
            raise ValueError("InputRequired needs input requests, state, or both")
        for key, request in self.requests.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"input request keys are non-empty strings, not {key!r}")
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise ValueError(
                    f"input request {key!r} is not an input request (use elicit(), sample() or list_roots())"
                )

    def __repr__(self) -> str:
        return f"InputRequired(requests={sorted(self.requests)!r}, state={self.state!r})"


def elicit(message: str, schema: Mapping[str, Any] | type[BaseModel]) -> InputRequest:
    """A form-mode `elicitation/create` input request, for a handler to raise in `InputRequired`.

    Args:
        message: what to ask the user.
        schema: the form: a flat JSON schema of primitive fields, or a pydantic model (its schema).

    Returns:
        The input request.
    """
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema_of(schema)},
    }


def elicit_url(message: str, url: str) -> InputRequest:
    """A URL-mode `elicitation/create` input request: the user completes it out of band.

    Args:
        message: why the user should open the URL.
        url: the page the user completes the interaction on.

    Returns:
        The input request.
    """
    return {"method": "elicitation/create", "params": {"mode": "url", "message": message, "url": url}}


def sample(
    messages: Sequence[Mapping[str, Any] | str],
    max_tokens: int,
    *,
    system_prompt: str | None = None,
    temperature: float | None = None,
    **extra: Any,
) -> InputRequest:
    """A `sampling/createMessage` input request: ask the client's LLM for a message.

    Args:
        messages: the conversation; plain strings become user text messages.
        max_tokens: the most tokens to sample.
        system_prompt: the system prompt to use.
        temperature: the sampling temperature.
        **extra: other params of `sampling/createMessage`, as the wire spells them
            (`modelPreferences`, `stopSequences`, ...).

    Returns:
        The input request.
    """
    built = [
        {"role": "user", "content": {"type": "text", "text": m}} if isinstance(m, str) else dict(m) for m in messages
    ]
    params: dict[str, Any] = {"messages": built, "maxTokens": max_tokens, **extra}
    if system_prompt is not None:
        params["systemPrompt"] = system_prompt
    if temperature is not None:
        params["temperature"] = temperature
    return {"method": "sampling/createMessage", "params": params}


def list_roots() -> InputRequest:
    """A `roots/list` input request."""
    return {"method": "roots/list"}


__all__ = [
    "InputRequest",
    "InputRequired",
    "StateSealer",
    "apply_elicitation",
    "check_elicitation_schema",
    "elicit",
    "elicit_url",
    "list_roots",
    "params_digest",
    "sample",
]
