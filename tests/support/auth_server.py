"""A small but real OAuth 2.1 authorization server for the tests, as an ASGI app.

Metadata (RFC 8414 and/or OIDC locations), /authorize (answers 302 at once), /token
(authorization_code with PKCE S256 checks, refresh_token with rotation, client_credentials,
jwt-bearer, client authentication none / client_secret_basic / client_secret_post /
private_key_jwt, optional DPoP with a nonce), /register (RFC 7591), /jwks, /introspect (RFC 7662).
Access tokens are ES256 JWTs for the `resource` that was asked for. Everything it saw is recorded.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from support.auth_asgi import Req, Resp, asgi, json_resp

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public_jwk(key: ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
    jwk = jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "use": "sig", "alg": "ES256"}


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    import json

    members = {k: jwk[k] for k in ("crv", "kty", "x", "y")}
    return b64url(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


@dataclass
class AuthServer:
    issuer: str = "https://as.test"
    metadata: tuple[str, ...] = ("oauth",)  # which of "oauth", "oidc", "oidc-append" to serve
    metadata_issuer: str | None = None  # serve this `issuer` in the metadata instead (mismatch tests)
    advertise_iss: bool | None = True
    iss_mode: str = "correct"  # correct | omit | wrong | normalized
    auth_methods: tuple[str, ...] | None = ("none", "client_secret_basic", "client_secret_post")
    registration: bool = True
    cimd: bool = False
    scopes_supported: list[str] | None = None
    grantable: set[str] | None = None  # scopes it will grant (None: whatever is asked)
    expires_in: int = 3600
    refresh: bool = True
    dpop: bool = False
    dpop_nonce: str | None = None
    pkce_methods: tuple[str, ...] | None = ("S256",)
    grant_types: tuple[str, ...] | None = None
    revocation: bool = True
    key: ec.EllipticCurvePrivateKey = field(default_factory=new_key)
    kid: str = field(default_factory=lambda: secrets.token_hex(4))
    rs_credentials: tuple[str, str] = ("rs", "rs-secret")
    # mutable state
    requests: list[Req] = field(default_factory=list)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    refresh_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    issued: dict[str, dict[str, Any]] = field(default_factory=dict)
    trusted_assertion_keys: list[Any] = field(default_factory=list)
    cimd_client_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        parts = urlsplit(self.issuer)
        self.host = parts.hostname or ""
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/")
        self.app = asgi(self.handle)

    # ------------------------------------------------------------------ helpers for tests

    def seen(self, path: str) -> list[Req]:
        return [r for r in self.requests if r.path == self.prefix + path or r.path == path]

    def grants(self, grant_type: str) -> list[dict[str, str]]:
        return [f for f in (r.form() for r in self.seen("/token")) if f.get("grant_type") == grant_type]

    def add_client(self, client_id: str, *, secret: str | None = None, method: str = "none", **extra: Any) -> None:
        self.clients[client_id] = {"client_secret": secret, "method": method, **extra}

    def revoke_all(self) -> None:
        self.issued.clear()

    def endpoint(self, name: str) -> str:
        return f"{self.base}{self.prefix}/{name}"

    def metadata_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "issuer": self.metadata_issuer or self.issuer,
            "authorization_endpoint": self.endpoint("authorize"),
            "token_endpoint": self.endpoint("token"),
            "jwks_uri": self.endpoint("jwks"),
            "introspection_endpoint": self.endpoint("introspect"),
            "response_types_supported": ["code"],
        }
        if self.registration:
            doc["registration_endpoint"] = self.endpoint("register")
        if self.pkce_methods is not None:
            doc["code_challenge_methods_supported"] = list(self.pkce_methods)
        if self.auth_methods is not None:
            doc["token_endpoint_auth_methods_supported"] = list(self.auth_methods)
        if self.advertise_iss is not None:
            doc["authorization_response_iss_parameter_supported"] = self.advertise_iss
        if self.cimd:
            doc["client_id_metadata_document_supported"] = True
        if self.scopes_supported is not None:
            doc["scopes_supported"] = self.scopes_supported
        if self.grant_types is not None:
            doc["grant_types_supported"] = list(self.grant_types)
        if self.dpop:
            doc["dpop_signing_alg_values_supported"] = ["ES256"]
        if self.revocation:
            doc["revocation_endpoint"] = self.endpoint("revoke")
        return doc

    def metadata_paths(self) -> set[str]:
        paths = set()
        if "oauth" in self.metadata:
            paths.add(f"/.well-known/oauth-authorization-server{self.prefix}")
        if "oidc" in self.metadata:
            paths.add(f"/.well-known/openid-configuration{self.prefix}")
        if "oidc-append" in self.metadata:
            paths.add(f"{self.prefix}/.well-known/openid-configuration")
        return paths

    # ------------------------------------------------------------------ routing

    async def handle(self, req: Req) -> Resp:
        self.requests.append(req)
        if req.method == "GET" and req.path in self.metadata_paths():
            return json_resp(200, self.metadata_doc())
        route = req.path[len(self.prefix) :] if req.path.startswith(self.prefix) else req.path
        if req.method == "GET" and route == "/authorize":
            return self.authorize(req)
        if req.method == "POST" and route == "/token":
            return self.token(req)
        if req.method == "POST" and route == "/register" and self.registration:
            return self.register(req)
        if req.method == "GET" and route == "/jwks":
            return json_resp(200, {"keys": [public_jwk(self.key, self.kid)]})
        if req.method == "POST" and route == "/introspect":
            return self.introspect(req)
        if req.method == "POST" and route == "/revoke" and self.revocation:
            form = req.form()  # RFC 7009: 200 whether or not the token was known
            self.issued.pop(form.get("token", ""), None)
            self.refresh_tokens.pop(form.get("token", ""), None)
            return Resp(200, b"", {})
        return json_resp(404, {"error": "not_found"})

    def authorize(self, req: Req) -> Resp:
        q = req.query
        client_id = q.get("client_id", "")
        client = self.clients.get(client_id)
        if client is None and not (self.cimd and client_id.startswith("https://")):
            return json_resp(400, {"error": "invalid_client"})
        if client is not None and q.get("redirect_uri") not in client.get("redirect_uris", [q.get("redirect_uri")]):
            return json_resp(400, {"error": "invalid_request", "error_description": "redirect_uri"})
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256":
            return json_resp(400, {"error": "invalid_request"})
        code = secrets.token_urlsafe(12)
        self.codes[code] = {**q}
        params = {"code": code, "state": q.get("state", "")}
        iss = {"correct": self.issuer, "wrong": "https://evil.test", "normalized": self.issuer + "/"}.get(self.iss_mode)
        if iss is not None:
            params["iss"] = iss
        return Resp(302, b"", {"location": f"{q['redirect_uri']}?{urlencode(params)}"})

    def client_auth(self, req: Req, form: dict[str, str]) -> str | None:
        """The authenticated client_id, or None."""
        header = req.headers.get("authorization", "")
        if header.startswith("Basic "):
            cid, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            cid, secret = unquote(cid), unquote(secret)
            client = self.clients.get(cid)
            ok = client is not None and client["method"] == "client_secret_basic" and client["client_secret"] == secret
            return cid if ok else None
        cid = form.get("client_id", "")
        client = self.clients.get(cid)
        if client is None:
            return cid if self.cimd and cid.startswith("https://") else None
        method = client["method"]
        if method == "client_secret_post":
            return cid if form.get("client_secret") == client["client_secret"] else None
        if method == "private_key_jwt":
            try:
                claims = jwt.decode(
                    form.get("client_assertion", ""), client["public_key"], algorithms=["ES256"], audience=self.issuer
                )
            except jwt.PyJWTError:
                return None
            return cid if claims.get("iss") == cid == claims.get("sub") else None
        return cid if method == "none" else None

    def check_dpop(self, req: Req) -> tuple[str | None, Resp | None]:
        proof = req.headers.get("dpop")
        if not self.dpop or proof is None:
            return None, None
        header = jwt.get_unverified_header(proof)
        key = jwt.PyJWK(header["jwk"])
        claims = jwt.decode(proof, key.key, algorithms=["ES256"])
        assert header["typ"] == "dpop+jwt" and claims["htm"] == "POST" and claims["htu"] == self.endpoint("token")
        if self.dpop_nonce is not None and claims.get("nonce") != self.dpop_nonce:
            return None, json_resp(400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": self.dpop_nonce})
        return jwk_thumbprint(header["jwk"]), None

    def token(self, req: Req) -> Resp:
        form = req.form()
        jkt, challenge = self.check_dpop(req)
        if challenge is not None:
            return challenge
        client_id = self.client_auth(req, form)
        grant = form.get("grant_type")
        if client_id is None and grant != JWT_BEARER:
            return json_resp(401, {"error": "invalid_client"})
        if grant == "authorization_code":
            code = self.codes.pop(form.get("code", ""), None)
            if code is None or code["client_id"] != client_id or code["redirect_uri"] != form.get("redirect_uri"):
                return json_resp(400, {"error": "invalid_grant"})
            challenge_ok = b64url(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
            if challenge_ok != code["code_challenge"] or code.get("resource") != form.get("resource"):
                return json_resp(400, {"error": "invalid_grant", "error_description": "pkce or resource"})
            return self.issue(client_id or "", "user-1", code.get("scope"), form.get("resource"), jkt, refreshable=True)
        if grant == "refresh_token":
            entry = self.refresh_tokens.pop(form.get("refresh_token", ""), None)  # rotation: one use
            if entry is None or entry["client_id"] != client_id:
                return json_resp(400, {"error": "invalid_grant"})
            return self.issue(
                entry["client_id"], entry["sub"], entry["scope"], entry["resource"], jkt, refreshable=True
            )
        if grant == "client_credentials":
            return self.issue(client_id or "", client_id or "", form.get("scope"), form.get("resource"), jkt)
        if grant == JWT_BEARER:
            return self.jwt_bearer(form, client_id, jkt)
        return json_resp(400, {"error": "unsupported_grant_type"})

    def jwt_bearer(self, form: dict[str, str], client_id: str | None, jkt: str | None) -> Resp:
        for key in self.trusted_assertion_keys:
            try:
                claims = jwt.decode(form.get("assertion", ""), key, algorithms=["ES256"], audience=self.issuer)
            except jwt.PyJWTError:
                continue
            return self.issue(
                client_id or claims.get("client_id", ""), claims["sub"], form.get("scope"), form.get("resource"), jkt
            )
        return json_resp(400, {"error": "invalid_grant"})

    def issue(
        self,
        client_id: str,
        sub: str,
        scope: str | None,
        resource: str | None,
        jkt: str | None,
        *,
        refreshable: bool = False,
    ) -> Resp:
        asked = [s for s in (scope or "").split(" ") if s]
        granted = [s for s in asked if self.grantable is None or s in self.grantable]
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": resource or "urn:unknown",
            "client_id": client_id,
            "scope": " ".join(granted),
            "iat": now,
            "exp": now + max(self.expires_in, 1),
            "jti": secrets.token_hex(8),
        }
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        token = jwt.encode(claims, self.key, algorithm="ES256", headers={"kid": self.kid})
        self.issued[token] = claims
        doc: dict[str, Any] = {
            "access_token": token,
            "token_type": "DPoP" if jkt else "Bearer",
            "expires_in": self.expires_in,
            "scope": " ".join(granted),
        }
        if self.refresh and refreshable:
            refresh = secrets.token_urlsafe(16)
            self.refresh_tokens[refresh] = {"client_id": client_id, "sub": sub, "scope": scope, "resource": resource}
            doc["refresh_token"] = refresh
        return json_resp(200, doc)

    def register(self, req: Req) -> Resp:
        body = req.json()
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        if self.auth_methods is not None and method not in self.auth_methods:
            return json_resp(400, {"error": "invalid_client_metadata"})
        client_id = f"client-{secrets.token_hex(4)}"
        secret = None if method == "none" else secrets.token_urlsafe(12)
        self.add_client(client_id, secret=secret, method=method, redirect_uris=body.get("redirect_uris", []))
        doc = {"client_id": client_id, "token_endpoint_auth_method": method, **body}
        if secret is not None:
            doc["client_secret"] = secret
        return json_resp(201, doc)

    def introspect(self, req: Req) -> Resp:
        header = req.headers.get("authorization", "")
        expected = "Basic " + base64.b64encode(":".join(self.rs_credentials).encode()).decode()
        if header != expected:
            return json_resp(401, {"error": "invalid_client"})
        claims = self.issued.get(req.form().get("token", ""))
        if claims is None or claims["exp"] < time.time():
            return json_resp(200, {"active": False})
        return json_resp(200, {"active": True, **claims})
