"""Sealed `requestState`: integrity-protected state a server hands the client and gets back.

`v1.<payload>.<hmac>`: HMAC-SHA256 (stdlib) over a JSON envelope of the state, the method, a
digest of the request's params, the principal the request was made by (when the transport
authenticates) and an expiry. Anything else is refused with -32602: a modified or forged token
(whatever its bytes), one issued for another call or another principal, one that expired.
Sealing gives integrity, not secrecy: do not put secrets in the state.

Keys are a list: the first seals, every one opens (rotate by putting the new key first). Every
worker of a deployment must share them; without keys, each process picks a random one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InternalError, InvalidParams

STATE_VERSION = 1
KEYS_ENV = "MCPGEN_STATE_KEYS"  # comma-separated keys (hex, or any text of 32+ characters)


def params_digest(params: Mapping[str, Any] | None) -> str:
    """A digest of the request params that define the call (not `_meta` or the MRTR fields)."""
    core = {k: v for k, v in (params or {}).items() if k not in ("_meta", "inputResponses", "requestState")}
    canonical = json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def keys_from_env(value: str | None = None) -> list[bytes]:
    """Sealing keys from `MCPGEN_STATE_KEYS` (or `value`): comma-separated, hex or plain text."""
    raw = os.environ.get(KEYS_ENV, "") if value is None else value
    keys = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        try:
            key = bytes.fromhex(item)
        except ValueError:
            key = item.encode()
        if len(key) < 32:
            raise ValueError(f"{KEYS_ENV}: a sealing key needs at least 32 bytes")
        keys.append(key)
    return keys


def _refused(reason: str) -> InvalidParams:
    return InvalidParams(f"Invalid or expired requestState: {reason}")


class StateSealer:
    """Seal and open `requestState`."""

    def __init__(
        self,
        keys: Sequence[bytes] | bytes | None = None,
        ttl_seconds: float = 600.0,
        sealed: bool = True,
        max_bytes: int = 64 * 1024,
    ) -> None:
        if isinstance(keys, bytes):
            keys = [keys]
        chosen = list(keys) if keys else keys_from_env()
        self.keys: list[bytes] = chosen or [secrets.token_bytes(32)]
        self.ttl_seconds = ttl_seconds
        self.sealed = sealed
        self.max_bytes = max_bytes

    def seal(
        self, body: Mapping[str, Any], method: str, params: Mapping[str, Any] | None, principal: str | None = None
    ) -> str:
        envelope: dict[str, Any] = {
            "b": dict(body),
            "m": method,
            "d": params_digest(params),
            "e": int(time.time() + self.ttl_seconds),
        }
        if principal is not None:
            envelope["p"] = principal
        payload = _b64(json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode())
        token = f"v{STATE_VERSION}.{payload}"
        if self.sealed:
            token += "." + self._mac(self.keys[0], token)
        if len(token) > self.max_bytes:
            raise InternalError(
                f"the request state is {len(token)} bytes, over the {self.max_bytes}-byte limit "
                "this server accepts back; keep less in it"
            )
        return token

    def open(
        self, token: object, method: str, params: Mapping[str, Any] | None, principal: str | None = None
    ) -> dict[str, Any]:
        """The body sealed into `token`, after checking integrity, binding and expiry (-32602 otherwise)."""
        if not isinstance(token, str) or len(token) > self.max_bytes or not token.isascii():
            raise _refused("not a state this server issued")
        parts = token.split(".")
        if len(parts) != (3 if self.sealed else 2) or parts[0] != f"v{STATE_VERSION}":
            raise _refused("not a state this server issued")
        if self.sealed:
            signed = f"{parts[0]}.{parts[1]}"
            if not any(hmac.compare_digest(parts[2].encode(), self._mac(key, signed).encode()) for key in self.keys):
                raise _refused("it was modified (integrity check failed)")
        try:
            envelope = json.loads(_unb64(parts[1]))
            body, bound_method, digest, expiry = envelope["b"], envelope["m"], envelope["d"], envelope["e"]
        except (ValueError, KeyError, TypeError, RecursionError):  # unsealed state may be nested without end
            raise _refused("unreadable") from None
        if bound_method != method or digest != params_digest(params):
            raise _refused("it belongs to another call (method or params differ)")
        if envelope.get("p") != principal:
            raise _refused("it was issued to another principal")
        if not isinstance(expiry, (int, float)) or time.time() > expiry:
            raise _refused("it expired; send the request again without it")
        if not isinstance(body, dict):
            raise _refused("unreadable")
        return body

    @staticmethod
    def _mac(key: bytes, text: str) -> str:
        return _b64(hmac.new(key, text.encode(), hashlib.sha256).digest())
