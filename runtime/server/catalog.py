"""What a server offers, by kind: tools, prompts, resources and resource templates.

`FeatureSet[T]` is a read-only mapping (name or URI -> definition) that tells the server when it
changes, so list-changed notifications go out. Capabilities are inferred from what is
registered (`infer_capabilities`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Union, overload

from ..protocol.changes import uri_covered

if TYPE_CHECKING:
    from . import Server
    from .context import RequestContext
    from .features import PromptDef, ResourceDef, TemplateDef, ToolDef

Feature = Union["ToolDef", "PromptDef", "ResourceDef", "TemplateDef"]
"""Anything a server lists: a tool, a prompt, a resource or a resource template."""

Visibility = Callable[["RequestContext[Any]", Feature], bool]
"""`visibility(ctx, item) -> bool`: may the caller of this request see (and use) this item?"""

MAX_URI_LENGTH = 64 * 1024  # longer URIs are refused (-32602) before any template is tried

T = TypeVar("T")
D = TypeVar("D")


class FeatureSet(Mapping[str, T], Generic[T]):
    """Registered features of one kind, in registration order. A second registration of a name
    (or URI) is an error unless it says `replace=True`."""

    def __init__(self, kind: str, on_change: Callable[[str], None], label: str | None = None) -> None:
        self.kind = kind  # the list-changed kind: tools, prompts or resources
        self.label = label or kind.rstrip("s")  # what one item is called in messages
        self._items: dict[str, T] = {}
        self._on_change = on_change

    def __getitem__(self, key: str) -> T:
        return self._items[key]

    @overload
    def get(self, key: str, /) -> T | None: ...
    @overload
    def get(self, key: str, /, default: T | D) -> T | D: ...
    def get(self, key: str, /, default: Any = None) -> Any:  # the dict's own (Mapping's goes through a KeyError)
        return self._items.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, key: str, item: T, *, replace: bool = False) -> T:
        """Register `item` under `key`; `ValueError` if `key` is taken, unless `replace`."""
        if not replace and key in self._items:
            raise ValueError(f"a {self.label} {key!r} is registered already (replace=True replaces it)")
        self._items[key] = item
        self._on_change(self.kind)
        return item

    def remove(self, key: str) -> bool:
        """Remove `key`; False (and no notification) if it was not there."""
        if self._items.pop(key, None) is None:
            return False
        self._on_change(self.kind)
        return True


def visible_by_scopes(ctx: RequestContext[Any], item: Feature) -> bool:
    """A `visibility` that shows an item only to callers whose token grants all of its `scopes=`
    (an item without scopes is everyone's; a caller without authentication sees only those).

    Args:
        ctx: the request's context (`ctx.auth`: the caller's token).
        item: the tool, prompt, resource or template.

    Returns:
        Whether the caller may see and use `item`.
    """
    if not item.scopes:
        return True
    granted = getattr(ctx.auth, "scopes", None)
    return isinstance(granted, (set, frozenset)) and item.scopes <= granted


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


def scopes_needed(server: Server, message: Mapping[str, Any]) -> frozenset[str]:
    """The `scopes=` of what a message names: the tool of a `tools/call`, the prompt of a
    `prompts/get`, the resource (or first matching template, as `resources/read` resolves it) of a
    `resources/read`, the prompt or template a `completion/complete` completes for, and for a
    `resources/subscribe` or a `subscriptions/listen`, every resource and template the subscribed
    URIs may cover (a subscription to a URI also hears about the URIs below it)."""
    params = message.get("params")
    method = message.get("method")
    if not isinstance(params, Mapping):
        return frozenset()
    if method in ("tools/call", "prompts/get"):
        found = (server.tools if method == "tools/call" else server.prompts).get(str(params.get("name")))
        return found.scopes if found is not None else frozenset()
    if method == "resources/read":
        uri = params.get("uri")
        return _resource_scopes(server, uri) if isinstance(uri, str) else frozenset()
    if method == "completion/complete":
        return _completion_scopes(server, params.get("ref"))
    if method in ("resources/subscribe", "resources/unsubscribe"):
        uris = [params.get("uri")]
    elif method == "subscriptions/listen":
        wanted = params.get("notifications")
        uris = list(wanted.get("resourceSubscriptions") or []) if isinstance(wanted, Mapping) else []
    else:
        return frozenset()
    return frozenset().union(*(_covered_scopes(server, uri) for uri in uris if isinstance(uri, str)))


def resolve_resource(server: Server, uri: str) -> tuple[ResourceDef | TemplateDef, dict[str, Any]] | None:
    """What serves `uri`: the static resource of that URI, else the first template that matches it
    (with the values of its variables); None when nothing does."""
    resource = server.resources.get(uri)
    if resource is not None:
        return resource, {}
    for template in server.templates.values():
        variables = template.template.match(uri)
        if variables is not None:
            return template, variables
    return None


def _resource_scopes(server: Server, uri: str) -> frozenset[str]:
    """The scopes of the resource `resources/read` would serve for `uri`."""
    found = resolve_resource(server, uri) if len(uri) <= MAX_URI_LENGTH else None  # longer: refused anyway
    return found[0].scopes if found is not None else frozenset()


def _covered_scopes(server: Server, uri: str) -> frozenset[str]:
    """Every scope a subscription to `uri` may hear about: the resources it covers (as change
    delivery decides, `uri_covered`) and every template whose URIs may fall under it (judged by the
    template's literal prefix, conservatively)."""
    if len(uri) > MAX_URI_LENGTH:
        return frozenset()
    base = uri.rstrip("/") + "/"
    found: set[str] = set()
    for resource in server.resources.values():
        if uri_covered((uri,), resource.uri):
            found |= resource.scopes
    for template in server.templates.values():
        literal = template.template.template.split("{", 1)[0]
        if literal.startswith(base) or base.startswith(literal) or uri.startswith(literal):
            found |= template.scopes
    return frozenset(found)


def _completion_scopes(server: Server, ref: object) -> frozenset[str]:
    if not isinstance(ref, Mapping):
        return frozenset()
    if ref.get("type") == "ref/prompt":
        prompt = server.prompts.get(str(ref.get("name")))
        return prompt.scopes if prompt is not None else frozenset()
    template = server.templates.get(str(ref.get("uri")))
    return template.scopes if template is not None and ref.get("type") == "ref/resource" else frozenset()
