"""Discovery over HTTP: protected resource metadata, then authorization server metadata (with the
2025-03-26 fallbacks when the caller allows them). Every fetch is bounded in size, and a stale pooled
connection dropped by the server is retried once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx

from ..shared._util import canonical_resource, decode_json, is_https_or_loopback, origin, read_capped, resource_covers
from ..shared.errors import DiscoveryError, InsecureEndpointError, IssuerMismatchError, ResourceMismatchError
from ..shared.metadata import (
    OAUTH_WELL_KNOWN,
    AuthorizationServerMetadata,
    ProtectedResourceMetadata,
    authorization_server_metadata_urls,
    protected_resource_metadata_urls,
)

_STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


def require_secure(what: str, url: str, *, allow_insecure_http: bool = False) -> None:
    """Raise `InsecureEndpointError` for a URL that is neither `https://` nor on a loopback host."""
    if not allow_insecure_http and not is_https_or_loopback(url):
        raise InsecureEndpointError(
            f"{what} is at {url}: plain http on a host that is not loopback would carry tokens and "
            "credentials in clear; use https (or allow_insecure_http=True for a test deployment)",
            url=url,
        )


async def get_json(http: httpx.AsyncClient, url: str, headers: Mapping[str, str]) -> tuple[int, Any]:
    """GET a JSON document: (status, parsed body or None)."""
    request_headers = {"Accept": "application/json", **headers}
    for attempt in range(2):
        try:
            async with http.stream("GET", url, headers=request_headers) as response:
                if response.status_code != 200:
                    return response.status_code, None
                return 200, decode_json(await read_capped(response))
        except _STALE_CONNECTION as exc:
            if attempt:
                raise DiscoveryError(f"could not fetch {url}: {exc!r}") from exc
        except httpx.HTTPError as exc:
            raise DiscoveryError(f"could not fetch {url}: {exc!r}") from exc
    raise AssertionError("unreachable")  # pragma: no cover


async def discover_resource_metadata(
    http: httpx.AsyncClient, server_url: str, header_url: str | None, headers: Mapping[str, str]
) -> ProtectedResourceMetadata | None:
    """The server's protected resource metadata, or None when no location has any (the server
    predates RFC 9728). A server error (5xx, 429) is raised: it says nothing about whether metadata
    exists, so it must not send the client down a legacy path."""
    for url in protected_resource_metadata_urls(server_url, header_url):
        status, doc = await get_json(http, url, headers)
        if status == 200 and doc is not None:
            return ProtectedResourceMetadata.from_document(doc, url=url)
        if status >= 500 or status == 429:
            raise DiscoveryError(f"protected resource metadata request to {url} failed with HTTP {status}")
    return None


async def discover_authorization_server(
    http: httpx.AsyncClient, issuer: str, headers: Mapping[str, str]
) -> AuthorizationServerMetadata:
    """Metadata for `issuer`, trying the well-known URLs in the specified order. A document naming
    another issuer is never used; the next URL is tried, and the mismatch is raised if nothing valid
    turns up."""
    mismatch: IssuerMismatchError | None = None
    for url in authorization_server_metadata_urls(issuer):
        status, doc = await get_json(http, url, headers)
        if status == 200 and doc is not None:
            try:
                return AuthorizationServerMetadata.from_document(doc, url=url, accepted_issuers=(issuer,))
            except IssuerMismatchError as exc:
                mismatch = mismatch or exc
        elif status >= 500 or status == 429:
            raise DiscoveryError(f"authorization server metadata request to {url} failed with HTTP {status}")
    if mismatch is not None:
        raise mismatch
    raise DiscoveryError(f"no authorization server metadata found for issuer {issuer}")


async def legacy_authorization_server(
    http: httpx.AsyncClient, base: str, headers: Mapping[str, str]
) -> AuthorizationServerMetadata:
    """The 2025-03-26 rules for a server without protected resource metadata: RFC 8414 metadata at
    the root of the server's origin, else the default endpoints there. The issuer is the origin
    (written with or without its trailing slash)."""
    url = f"{base}{OAUTH_WELL_KNOWN}"
    status, doc = await get_json(http, url, headers)
    if status == 200 and doc is not None:
        return AuthorizationServerMetadata.from_document(doc, url=url, accepted_issuers=(base, base + "/"))
    if status >= 500 or status == 429:
        raise DiscoveryError(f"authorization server metadata request to {url} failed with HTTP {status}")
    return AuthorizationServerMetadata.legacy_default(base)


async def discover_servers(  # noqa: PLR0913 - one keyword per decision the flow makes
    http: httpx.AsyncClient,
    server_url: str,
    resource_metadata_url: str | None,
    revision: str | None,
    *,
    legacy: bool,
    pick_issuer: Callable[[tuple[str, ...]], str],
    allow_insecure_http: bool = False,
) -> tuple[AuthorizationServerMetadata, ProtectedResourceMetadata | None, str]:
    """(authorization server metadata, protected resource metadata or None, the resource to ask
    tokens for) of the MCP server at `server_url`. Without resource metadata the 2025-03-26
    fallbacks are used when `legacy` allows them; metadata for another resource raises
    `ResourceMismatchError`; every URL is checked with `require_secure` before it is used."""
    for what, url in (("the MCP server", server_url), ("its resource metadata", resource_metadata_url)):
        if url is not None:
            require_secure(what, url, allow_insecure_http=allow_insecure_http)
    headers = {"MCP-Protocol-Version": revision} if revision else {}
    prm = await discover_resource_metadata(http, server_url, resource_metadata_url, headers)
    if prm is None:
        if not legacy:
            raise DiscoveryError(
                f"{server_url} publishes no protected resource metadata (RFC 9728), and protocol "
                f"revision {revision} has no fallback"
            )
        meta = await legacy_authorization_server(http, origin(server_url), headers)
        resource = canonical_resource(server_url)
    else:
        if not resource_covers(prm.resource, server_url):
            raise ResourceMismatchError(
                f"protected resource metadata at {prm.url} is for {prm.resource}, not {server_url}",
                resource=prm.resource,
                server_url=server_url,
            )
        issuer = pick_issuer(prm.authorization_servers)
        require_secure("the authorization server", issuer, allow_insecure_http=allow_insecure_http)
        meta = await discover_authorization_server(http, issuer, headers)
        resource = prm.resource
    for name, endpoint in meta.endpoints():
        require_secure(f"the authorization server's {name}", endpoint, allow_insecure_http=allow_insecure_http)
    return meta, prm, resource
