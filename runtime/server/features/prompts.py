"""Prompts from plain Python functions: arguments from the signature, messages from the return value."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from .calling import Callee, describe
from .common import dump, hints, is_content, text, wire_object
from .content import media_block


@dataclass
class PromptDef:
    name: str
    callee: Callee
    description: str | None
    title: str | None
    arguments: list[dict[str, Any]]
    content_types: frozenset[str]
    icons: list[dict[str, Any]] | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)  # OAuth scopes a caller needs

    @property
    def fn(self) -> Callable[..., Any]:
        return self.callee.fn

    def describe(self) -> dict[str, Any]:
        return wire_object(
            {"name": self.name},
            title=self.title,
            description=self.description,
            arguments=self.arguments,
            icons=self.icons,
        )


def make_prompt(  # noqa: PLR0913 - every keyword is a documented option
    fn: Callable[..., Any],
    *,
    content_types: Collection[str],
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    argument_descriptions: dict[str, str] | None = None,
    scopes: Collection[str] = (),
) -> PromptDef:
    found = hints(fn)
    callee = describe(fn, found)
    skipped = callee.not_from_client
    arguments = []
    for pname, param in inspect.signature(fn).parameters.items():
        if pname in skipped:
            continue
        argument: dict[str, Any] = {"name": pname, "required": param.default is inspect.Signature.empty}
        if argument_descriptions and pname in argument_descriptions:
            argument["description"] = argument_descriptions[pname]
        arguments.append(argument)
    return PromptDef(
        name=name or fn.__name__,
        callee=callee,
        description=description if description is not None else inspect.getdoc(fn),
        title=title,
        arguments=arguments,
        content_types=frozenset(content_types),
        scopes=frozenset(scopes),
    )


def _content(value: Any) -> Any:
    if isinstance(value, str):
        return text(value)
    block = media_block(value)
    return block if block is not None else dump(value)


def _message(prompt: PromptDef, item: Any) -> dict[str, Any]:
    block = media_block(item)
    if block is not None:
        return {"role": "user", "content": block}
    item = dump(item)
    if isinstance(item, str):
        return {"role": "user", "content": text(item)}
    if isinstance(item, dict) and "role" in item:
        return {**item, "content": _content(item.get("content"))}
    if is_content(item, prompt.content_types):
        return {"role": "user", "content": item}
    raise TypeError(f"prompt {prompt.name} returned {type(item).__name__}, not a message")


def prompt_result(prompt: PromptDef, value: Any) -> dict[str, Any]:
    """A prompt function's return value as a `GetPromptResult` object."""
    dumped = dump(value)
    if isinstance(dumped, dict) and "messages" in dumped:
        result = dict(dumped)
    else:
        items = dumped if isinstance(dumped, (list, tuple)) else [dumped]
        result = {"messages": [_message(prompt, item) for item in items]}
    if prompt.description and "description" not in result:
        result["description"] = prompt.description
    return result
