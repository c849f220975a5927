"""DPoP on the resource server (RFC 9449 §4.3, §7): checking the proof that comes with a
DPoP-bound access token. Needs the `auth` extra (PyJWT with `cryptography`).

A proof is accepted when it is a JWS of type `dpop+jwt`, signed with an asymmetric algorithm this
server allows by the public key in its `jwk` header (no private members); its `htm` and `htu` are
this request's method and URL (without query or fragment, after syntax normalisation); its `iat` is
recent; its `ath` is the hash of the access token presented; its key's thumbprint is the token's
`cnf.jkt`; and its `jti` has not been seen within the proof lifetime (a replay cache per process:
with several worker processes, a proof could be replayed once against each other worker).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..shared._util import b64url
from ..shared.errors import InvalidToken
from ..shared.signing import jwk_thumbprint, jwt_module

DPOP_ALGORITHMS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "EdDSA")
_PRIVATE_JWK_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_REPLAY_ENTRIES = 100_000


class InvalidDPoPProof(InvalidToken):
    """The DPoP proof is missing, malformed, or does not match the request or the token
    (answered with 401 and a `DPoP error="invalid_dpop_proof"` challenge)."""


def normalized_htu(url: str) -> str:
    """`url` without query and fragment, scheme and host lower-cased, default port dropped.
    `InvalidDPoPProof` for a URL with user information or an invalid port."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        raise InvalidDPoPProof(f"DPoP proof htu has an invalid port: {url!r}") from None
    if "@" in parts.netloc:
        raise InvalidDPoPProof("DPoP proof htu must not carry user information")
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", "", ""))


def access_token_hash(token: str) -> str:
    """The `ath` claim for `token`: base64url of its SHA-256."""
    return b64url(hashlib.sha256(token.encode("utf-8")).digest())


class DPoPProofChecker:
    """Checks DPoP proofs for one resource server. `max_age` is how old (by `iat`) a proof may be,
    `leeway` the clock skew allowed either way; a proof's `jti` is remembered for that long.
    `algorithms` are the signature algorithms accepted.

    Raises:
        MissingExtraError: the `auth` extra is not installed.
    """

    def __init__(
        self, *, algorithms: Sequence[str] = DPOP_ALGORITHMS, max_age: float = 300.0, leeway: float = 30.0
    ) -> None:
        jwt_module()  # fail at configuration time without the extra, not on the first request
        self.algorithms = tuple(algorithms)
        self.max_age = max_age
        self.leeway = leeway
        self._seen: dict[str, float] = {}  # jti -> when it may be forgotten

    def check(self, proof: str, *, method: str, url: str, token: str, jkt: str) -> Mapping[str, Any]:
        """The claims of `proof` (a `DPoP` header's value), checked for the request `method` and
        `url`, the access `token` it presents and `jkt`, the thumbprint the token is bound to.

        Raises:
            InvalidDPoPProof: what is wrong with the proof.
        """
        jwt = jwt_module()
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError as exc:
            raise InvalidDPoPProof(f"DPoP proof is not a JWS: {exc}") from None
        key = self._key(header)
        try:
            claims: dict[str, Any] = jwt.decode(
                proof,
                key,
                algorithms=[header["alg"]],
                # iat is checked below, with the leeway both ways; PyJWT would refuse any future iat
                options={
                    "verify_aud": False,
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "require": ["jti", "htm", "htu", "iat"],
                },
            )
        except jwt.PyJWTError as exc:
            raise InvalidDPoPProof(f"DPoP proof rejected: {exc}") from None
        self._check_claims(claims, method=method, url=url, token=token)
        if jwk_thumbprint(header["jwk"]) != jkt:
            raise InvalidDPoPProof("DPoP proof is signed by a key the access token is not bound to")
        self._remember(claims["jti"])
        return claims

    def _key(self, header: Mapping[str, Any]) -> Any:
        jwt = jwt_module()
        if header.get("typ") != "dpop+jwt":
            raise InvalidDPoPProof("DPoP proof must have typ dpop+jwt")
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidDPoPProof(f"DPoP proof algorithm {alg!r} is not accepted")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or _PRIVATE_JWK_MEMBERS.intersection(jwk):
            raise InvalidDPoPProof("DPoP proof must carry a public key in its jwk header")
        try:
            return jwt.PyJWK(jwk, algorithm=alg).key
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
            raise InvalidDPoPProof(f"DPoP proof key unusable: {exc}") from None

    def _check_claims(self, claims: Mapping[str, Any], *, method: str, url: str, token: str) -> None:
        if claims["htm"] != method.upper():
            raise InvalidDPoPProof(f"DPoP proof is for {claims['htm']!r}, not {method.upper()}")
        htu = claims["htu"]
        if not isinstance(htu, str) or normalized_htu(htu) != normalized_htu(url):
            raise InvalidDPoPProof("DPoP proof is for another URL")
        iat = claims["iat"]
        current = time.time()
        if not isinstance(iat, (int, float)) or isinstance(iat, bool) or not math.isfinite(iat):
            raise InvalidDPoPProof("DPoP proof iat is not a number")
        if iat > current + self.leeway or iat < current - self.max_age - self.leeway:
            raise InvalidDPoPProof("DPoP proof is too old or from the future")
        if claims.get("ath") != access_token_hash(token):
            raise InvalidDPoPProof("DPoP proof ath does not match the access token")
        jti = claims["jti"]
        if not isinstance(jti, str) or not jti or len(jti) > 256:
            raise InvalidDPoPProof("DPoP proof jti must be a short string")
        if jti in self._seen and self._seen[jti] > current:
            raise InvalidDPoPProof("DPoP proof replayed")

    def _remember(self, jti: str) -> None:
        current = time.time()
        if len(self._seen) >= MAX_REPLAY_ENTRIES:
            self._seen = {k: until for k, until in self._seen.items() if until > current}
            if len(self._seen) >= MAX_REPLAY_ENTRIES:  # a flood of fresh proofs: forget the oldest half
                keep = sorted(self._seen.items(), key=lambda item: item[1])[MAX_REPLAY_ENTRIES // 2 :]
                self._seen = dict(keep)
        self._seen[jti] = current + self.max_age + 2 * self.leeway
