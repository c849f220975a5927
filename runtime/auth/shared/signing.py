"""JWT signing for the client: `private_key_jwt` client assertions (RFC 7523 §2.2) and DPoP proofs
(RFC 9449). Needs the optional `auth` extra (PyJWT with `cryptography`), imported on first use so the
rest of the authorization code works without it."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ._util import b64url
from .errors import MissingExtraError

if TYPE_CHECKING:
    from types import ModuleType

_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
_EC_CURVES = {"ES256": "SECP256R1", "ES384": "SECP384R1", "ES512": "SECP521R1"}


def jwt_module() -> ModuleType:
    """PyJWT, or a `MissingExtraError` saying which extra to install."""
    try:
        import jwt
        from jwt.algorithms import has_crypto
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise MissingExtraError("JWT signing needs the `auth` extra: pip install 'mcpgen[auth]'") from exc
    if not has_crypto:  # pragma: no cover
        raise MissingExtraError("JWT signing needs `cryptography`: pip install 'mcpgen[auth]'")
    return jwt


def jwt_available() -> bool:
    try:
        jwt_module()
    except MissingExtraError:  # pragma: no cover
        return False
    return True


class SigningKey:
    """A private key and the JWS algorithm it signs with (`ES256` by default).

    Args:
        private_key: a `cryptography` private key (elliptic-curve or RSA, matching `algorithm`).
        algorithm: the JWS algorithm (`ES256`, `ES384`, `ES512`, `RS256`, ...).
        kid: the key id put in the header of what it signs (none by default).
    """

    def __init__(self, private_key: Any, algorithm: str = "ES256", *, kid: str | None = None) -> None:
        self.private_key = private_key
        self.algorithm = algorithm
        self.kid = kid

    @classmethod
    def generate(cls, algorithm: str = "ES256") -> SigningKey:
        """A fresh elliptic-curve key for `algorithm`: ES256, ES384 or ES512.

        Raises:
            ValueError: another algorithm.
            MissingExtraError: the `auth` extra is not installed.
        """
        jwt_module()
        from cryptography.hazmat.primitives.asymmetric import ec

        curve_name = _EC_CURVES.get(algorithm)
        if curve_name is None:
            raise ValueError(f"can only generate keys for {sorted(_EC_CURVES)}, not {algorithm}")
        curve = getattr(ec, curve_name)()
        return cls(ec.generate_private_key(curve), algorithm)

    @classmethod
    def from_pem(cls, pem: str | bytes, algorithm: str = "ES256", *, kid: str | None = None) -> SigningKey:
        """A key from `pem`, a PKCS#8 (or traditional) PEM private key, unencrypted, to sign
        with `algorithm` under the key id `kid`.

        Raises:
            ValueError: `pem` is not a readable PEM private key.
            TypeError: the key is encrypted.
            MissingExtraError: the `auth` extra is not installed.
        """
        jwt_module()
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        data = pem.encode() if isinstance(pem, str) else pem
        return cls(load_pem_private_key(data, password=None), algorithm, kid=kid)

    def public_jwk(self) -> dict[str, str]:
        """The public half as a JWK (no private members)."""
        jwt = jwt_module()
        algorithm = jwt.get_algorithm_by_name(self.algorithm)
        jwk = algorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        return {k: v for k, v in jwk.items() if isinstance(v, str) and k in ("kty", "crv", "x", "y", "n", "e")}

    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 JWK thumbprint (DPoP's `jkt`)."""
        return jwk_thumbprint(self.public_jwk())

    def sign(self, claims: dict[str, Any], headers: dict[str, Any] | None = None) -> str:
        """A compact JWS of `claims`, with the extra JOSE `headers` (and `kid`, when the key has one).

        Raises:
            MissingExtraError: the `auth` extra is not installed.
        """
        jwt = jwt_module()
        extra = dict(headers or {})
        if self.kid and "kid" not in extra and "jwk" not in extra:
            extra["kid"] = self.kid
        token: str = jwt.encode(claims, self.private_key, algorithm=self.algorithm, headers=extra)
        return token


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (DPoP's `jkt`)."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty", "")), tuple(sorted(jwk)))
    canonical = json.dumps({m: jwk[m] for m in members if m in jwk}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


def client_assertion(key: SigningKey, client_id: str, audience: str, *, lifetime: int = 60) -> str:
    """A `private_key_jwt` client assertion: `iss` = `sub` = the client ID, `aud` = the
    authorization server's issuer, short-lived, unique `jti`."""
    issued = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + lifetime,
        "jti": secrets.token_urlsafe(16),
    }
    return key.sign(claims)


def _htu(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class DPoPProofs:
    """Builds DPoP proofs with one key and remembers the nonce each server last handed out
    (RFC 9449 §8, §9): authorization server and resource server nonces are kept apart by origin.

    Args:
        key: the key proofs are signed with (default: a new ES256 key, made when first needed).
    """

    def __init__(self, key: SigningKey | None = None) -> None:
        self._key = key
        self._nonces: dict[str, str] = {}

    @property
    def key(self) -> SigningKey:
        """The key proofs are signed with."""
        if self._key is None:
            self._key = SigningKey.generate("ES256")
        return self._key

    @property
    def jkt(self) -> str:
        """The key's RFC 7638 thumbprint: what a DPoP-bound token is bound to."""
        return self.key.thumbprint()

    def proof(self, method: str, url: str, *, access_token: str | None = None) -> str:
        """A fresh proof for one request: `htm`, `htu` (no query or fragment), `iat`, a unique `jti`,
        `ath` when presenting an access token, and the server's current nonce if it gave one.

        Args:
            method: the request's HTTP method.
            url: the request's URL.
            access_token: the token the request presents (None: a token request).
        """
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": _htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        nonce = self._nonces.get(_origin_key(url))
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.key.public_jwk()}
        return self.key.sign(claims, headers)

    def note_nonce(self, url: str, nonce: str | None) -> bool:
        """Remember `nonce`, a `DPoP-Nonce` from a response of `url`'s server; True when it is new."""
        if not nonce:
            return False
        key = _origin_key(url)
        changed = self._nonces.get(key) != nonce
        self._nonces[key] = nonce
        return changed

    def nonce_for(self, url: str) -> str | None:
        """The nonce `url`'s server last handed out (None: none yet)."""
        return self._nonces.get(_origin_key(url))
