"""What a server offers, by kind: tools, prompts, resources and resource templates.

`Features[T]` is a read-only mapping (name or URI -> definition) that tells the server when it
changes, so list-changed notifications go out. Capabilities are inferred from what is
registered (`infer_capabilities`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Features(Mapping[str, T], Generic[T]):
    """Registered features of one kind, in registration order."""

    def __init__(self, kind: str, on_change: Callable[[str], None]) -> None:
        self.kind = kind  # the list-changed kind: tools, prompts or resources
        self._items: dict[str, T] = {}
        self._on_change = on_change

    def __getitem__(self, key: str) -> T:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, key: str, item: T) -> T:
        self._items[key] = item
        self._on_change(self.kind)
        return item

    def remove(self, key: str) -> bool:
        """Remove `key`; False (and no notification) if it was not there."""
        if self._items.pop(key, None) is None:
            return False
        self._on_change(self.kind)
        return True


def infer_capabilities(  # noqa: PLR0913 - every keyword is a documented option
    *,
    tools: bool,
    prompts: bool,
    resources: bool,
    completions: bool,
    logging: bool,
    list_changed: bool,
    extensions: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
    """The capabilities a server with these features declares."""
    caps: dict[str, Any] = {}
    if tools:
        caps["tools"] = {"listChanged": list_changed}
    if prompts:
        caps["prompts"] = {"listChanged": list_changed}
    if resources:
        caps["resources"] = {"subscribe": True, "listChanged": list_changed}
    if completions:
        caps["completions"] = {}
    if logging:
        caps["logging"] = {}
    if extensions:
        caps["extensions"] = {k: dict(v) for k, v in extensions.items()}
    return caps
