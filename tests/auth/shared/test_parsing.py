"""Pure pieces: `WWW-Authenticate` parsing, well-known URLs, resource matching, metadata checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcpgen.runtime.auth import (
    AuthorizationServerMetadata,
    DiscoveryError,
    IssuerMismatchError,
    ProtectedResourceMetadata,
    format_challenge,
    parse_www_authenticate,
)
from mcpgen.runtime.auth.shared._util import canonical_resource, is_https_or_loopback, resource_covers
from mcpgen.runtime.auth.shared.metadata import authorization_server_metadata_urls, protected_resource_metadata_urls


def test_bearer_challenge_with_quoted_params() -> None:
    header = (
        'Bearer error="insufficient_scope", scope="files:read files:write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", '
        'error_description="needs \\"write\\""'
    )
    (challenge,) = parse_www_authenticate(header)
    assert challenge.scheme == "Bearer"
    assert challenge.params == {
        "error": "insufficient_scope",
        "scope": "files:read files:write",
        "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource",
        "error_description": 'needs "write"',
    }


def test_several_challenges_token68_and_case() -> None:
    found = parse_www_authenticate(['Basic YWxhZGRpbjpvcGVuc2VzYW1l==, DPoP algs="ES256"', "BEARER Realm=x"])
    assert [(c.scheme, c.token68, c.params) for c in found] == [
        ("Basic", "YWxhZGRpbjpvcGVuc2VzYW1l==", {}),
        ("DPoP", None, {"algs": "ES256"}),
        ("BEARER", None, {"realm": "x"}),
    ]
    assert found[2].is_scheme("bearer") and found[2].get("REALM") == "x"


@given(st.text(max_size=200))
def test_parser_never_raises(text: str) -> None:
    for challenge in parse_www_authenticate(text):
        assert challenge.scheme


@given(
    st.dictionaries(
        st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
        max_size=5,
    )
)
def test_format_then_parse_round_trips(params: dict[str, str]) -> None:
    (challenge,) = parse_www_authenticate(format_challenge("Bearer", params))
    assert challenge.params == params


def test_protected_resource_metadata_urls() -> None:
    assert protected_resource_metadata_urls("https://h.test/public/mcp", None) == [
        "https://h.test/.well-known/oauth-protected-resource/public/mcp",
        "https://h.test/.well-known/oauth-protected-resource",
    ]
    assert protected_resource_metadata_urls("https://h.test/", "https://h.test/custom.json") == [
        "https://h.test/custom.json",
        "https://h.test/.well-known/oauth-protected-resource",
    ]


def test_authorization_server_metadata_urls() -> None:
    assert authorization_server_metadata_urls("https://auth.test/tenant1/") == [
        "https://auth.test/.well-known/oauth-authorization-server/tenant1",
        "https://auth.test/.well-known/openid-configuration/tenant1",
        "https://auth.test/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://auth.test") == [
        "https://auth.test/.well-known/oauth-authorization-server",
        "https://auth.test/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("resource", "server", "covered"),
    [
        ("https://h.test/mcp", "https://h.test/mcp", True),
        ("https://h.test", "https://h.test/mcp", True),
        ("https://H.TEST:443/", "https://h.test/mcp", True),
        ("https://h.test/mcp/", "https://h.test/mcp", True),
        ("https://h.test/mc", "https://h.test/mcp", False),
        ("https://h.test/other", "https://h.test/mcp", False),
        ("https://evil.test/mcp", "https://h.test/mcp", False),
        ("http://h.test/mcp", "https://h.test/mcp", False),
        ("https://h.test:8443/mcp", "https://h.test/mcp", False),
        ("https://h.test/mcp#frag", "https://h.test/mcp", False),
        ("not a url", "https://h.test/mcp", False),
    ],
)
def test_resource_covers(resource: str, server: str, covered: bool) -> None:
    assert resource_covers(resource, server) is covered


def test_canonical_resource() -> None:
    assert canonical_resource("HTTPS://MCP.Example.com/Path?q=1#frag") == "https://mcp.example.com/Path"
    assert canonical_resource("https://mcp.example.com/") == "https://mcp.example.com"
    with pytest.raises(ValueError):
        canonical_resource("mcp.example.com")


def test_metadata_documents_are_validated() -> None:
    with pytest.raises(DiscoveryError):
        ProtectedResourceMetadata.from_document({"resource": "https://h"}, url="u")
    with pytest.raises(DiscoveryError):
        ProtectedResourceMetadata.from_document(["x"], url="u")
    doc = {"issuer": "https://as.test", "token_endpoint": "https://as.test/t"}
    meta = AuthorizationServerMetadata.from_document(doc, url="u", accepted_issuers=("https://as.test",))
    assert meta.code_challenge_methods_supported is None and not meta.iss_parameter_supported
    with pytest.raises(IssuerMismatchError):
        AuthorizationServerMetadata.from_document(doc, url="u", accepted_issuers=("https://as.test/",))
    with pytest.raises(DiscoveryError):
        AuthorizationServerMetadata.from_document(
            {"issuer": "https://as.test"}, url="u", accepted_issuers=("https://as.test",)
        )


@pytest.mark.parametrize(
    ("url", "secure"),
    [
        ("https://as.example.com/token", True),
        ("http://localhost:9000/token", True),
        ("http://app.localhost/token", False),
        ("http://127.0.0.1.evil.example/token", False),
        ("http://127.0.0.1@evil.example/token", False),
        ("http://127.0.0.1/token", True),
        ("http://127.8.0.1:80/token", True),
        ("http://[::1]:8080/token", True),
        ("http://as.example.com/token", False),
        ("http://10.0.0.1/token", False),
        ("http://localhost.example.com/token", False),
        ("ftp://localhost/token", False),
        ("not a url", False),
    ],
)
def test_only_https_or_loopback_endpoints_count_as_secure(url: str, secure: bool) -> None:
    assert is_https_or_loopback(url) is secure
