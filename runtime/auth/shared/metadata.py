"""Protected resource metadata (RFC 9728) and authorization server metadata (RFC 8414 / OpenID
Connect Discovery): the documents, their validation and the well-known URLs they are fetched from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .errors import DiscoveryError, IssuerMismatchError

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


def _str_list(value: object) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [v for v in value if isinstance(v, str)]


def _opt_str(doc: Mapping[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class ProtectedResourceMetadata:
    """An RFC 9728 document. `url` is where it was fetched from."""

    resource: str
    """The protected resource's identifier (the MCP server's URL)."""
    authorization_servers: tuple[str, ...]
    """The issuers of the authorization servers the resource accepts tokens from."""
    scopes_supported: tuple[str, ...] | None = None
    """The scopes the resource knows (None: not said)."""
    url: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The whole document."""

    @classmethod
    def from_document(cls, doc: object, *, url: str) -> ProtectedResourceMetadata:
        """Validate `doc`, a document fetched from `url`.

        Raises:
            DiscoveryError: not a JSON object, or no `resource` or `authorization_servers`.
        """
        if not isinstance(doc, dict):
            raise DiscoveryError(f"protected resource metadata at {url} is not a JSON object")
        resource = doc.get("resource")
        if not isinstance(resource, str) or not resource:
            raise DiscoveryError(f"protected resource metadata at {url} has no `resource`")
        servers = _str_list(doc.get("authorization_servers")) or []
        if not servers:
            raise DiscoveryError(f"protected resource metadata at {url} lists no `authorization_servers`")
        scopes = _str_list(doc.get("scopes_supported"))
        return cls(
            resource=resource,
            authorization_servers=tuple(servers),
            scopes_supported=tuple(scopes) if scopes is not None else None,
            url=url,
            raw=doc,
        )


@dataclass(frozen=True)
class AuthorizationServerMetadata:
    """The fields of RFC 8414 / OIDC metadata the client uses. `legacy_defaults` marks the
    2025-03-26 fallback (no metadata at all; endpoints at fixed paths of the server's origin).

    Each field is the document's field of the same name (None: the document does not have it),
    except `iss_parameter_supported` (`authorization_response_iss_parameter_supported`), `url`
    (where the document was fetched from) and `raw` (the whole document): `issuer`,
    `token_endpoint`, `authorization_endpoint`, `registration_endpoint`, `revocation_endpoint`,
    `scopes_supported`, `grant_types_supported`, `code_challenge_methods_supported`,
    `token_endpoint_auth_methods_supported`, `client_id_metadata_document_supported` and
    `dpop_signing_alg_values_supported`.
    """

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    revocation_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None
    url: str = ""
    legacy_defaults: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_document(cls, doc: object, *, url: str, accepted_issuers: tuple[str, ...]) -> AuthorizationServerMetadata:
        """Validate `doc`, a document fetched from `url`. Its `issuer` must be identical (simple string
        comparison) to one of `accepted_issuers` (the issuer the well-known URL was built from), else it
        is rejected.

        Raises:
            IssuerMismatchError: the document's `issuer` is not one of `accepted_issuers`.
            DiscoveryError: not a JSON object, or no `token_endpoint`.
        """
        if not isinstance(doc, dict):
            raise DiscoveryError(f"authorization server metadata at {url} is not a JSON object")
        issuer = doc.get("issuer")
        if not isinstance(issuer, str) or issuer not in accepted_issuers:
            raise IssuerMismatchError(
                f"authorization server metadata at {url} names issuer {issuer!r}, expected {accepted_issuers[0]!r}",
                expected=accepted_issuers[0],
                found=issuer,
            )
        token_endpoint = _opt_str(doc, "token_endpoint")
        if token_endpoint is None:
            raise DiscoveryError(f"authorization server metadata at {url} has no `token_endpoint`")

        def tup(key: str) -> tuple[str, ...] | None:
            found = _str_list(doc.get(key))
            return tuple(found) if found is not None else None

        return cls(
            issuer=issuer,
            token_endpoint=token_endpoint,
            authorization_endpoint=_opt_str(doc, "authorization_endpoint"),
            registration_endpoint=_opt_str(doc, "registration_endpoint"),
            revocation_endpoint=_opt_str(doc, "revocation_endpoint"),
            scopes_supported=tup("scopes_supported"),
            grant_types_supported=tup("grant_types_supported"),
            code_challenge_methods_supported=tup("code_challenge_methods_supported"),
            token_endpoint_auth_methods_supported=tup("token_endpoint_auth_methods_supported"),
            iss_parameter_supported=doc.get("authorization_response_iss_parameter_supported") is True,
            client_id_metadata_document_supported=doc.get("client_id_metadata_document_supported") is True,
            dpop_signing_alg_values_supported=tup("dpop_signing_alg_values_supported"),
            url=url,
            raw=doc,
        )

    @classmethod
    def legacy_default(cls, base: str) -> AuthorizationServerMetadata:
        """The 2025-03-26 fallback endpoints (`/authorize`, `/token`, `/register` under `base`, the server's origin)."""
        return cls(
            issuer=base,
            token_endpoint=f"{base}/token",
            authorization_endpoint=f"{base}/authorize",
            registration_endpoint=f"{base}/register",
            code_challenge_methods_supported=("S256",),
            url="",
            legacy_defaults=True,
        )

    def endpoints(self) -> list[tuple[str, str]]:
        """(field name, URL) of each endpoint the document gives."""
        named = ("token_endpoint", "authorization_endpoint", "registration_endpoint")
        return [(name, url) for name in named if (url := getattr(self, name)) is not None]

    def supports_scope(self, scope: str) -> bool:
        """Whether `scope` is in the document's `scopes_supported`."""
        return scope in (self.scopes_supported or ())


def _split_for_well_known(url: str) -> tuple[str, str]:
    """(`scheme://authority`, path without its terminating slashes) of an absolute URL."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise DiscoveryError(f"not an absolute URL: {url!r}")
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def protected_resource_metadata_urls(server_url: str, header_url: str | None) -> list[str]:
    """Where to look for protected resource metadata, in order: the `resource_metadata` URL of the
    challenge when there is one, then the path-based well-known URL, then the root one."""
    base, path = _split_for_well_known(server_url)
    urls = [header_url] if header_url else []
    if path:
        urls.append(f"{base}{PRM_WELL_KNOWN}{path}")
    urls.append(f"{base}{PRM_WELL_KNOWN}")
    return list(dict.fromkeys(urls))


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """The RFC 8414 / OIDC try order for an issuer: with a path, OAuth path insertion, OIDC path
    insertion, OIDC path appending; without one, OAuth then OIDC."""
    base, path = _split_for_well_known(issuer)
    if path:
        return [f"{base}{OAUTH_WELL_KNOWN}{path}", f"{base}{OIDC_WELL_KNOWN}{path}", f"{base}{path}{OIDC_WELL_KNOWN}"]
    return [f"{base}{OAUTH_WELL_KNOWN}", f"{base}{OIDC_WELL_KNOWN}"]
