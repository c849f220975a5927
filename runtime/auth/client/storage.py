"""Where the client keeps what authorization produced: tokens per MCP server, client registrations
per authorization server (keyed by its `issuer`, so credentials issued by one authorization server
are never presented to another).

`TokenStorage` is the interface; `InMemoryTokenStorage` is the default and `FileTokenStorage` keeps
everything in one JSON file readable by its owner only (mode 0600, directory 0700 when created).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.to_thread

from ..shared._util import LoopLock, now


@dataclass
class TokenSet:
    """Tokens for one MCP server. `scopes` are the granted scopes (the requested ones when the
    authorization server did not say). `issuer` and `token_endpoint` say where a refresh goes;
    `dpop_jkt` is the thumbprint of the key a DPoP-bound token is bound to; `client_id` the client
    the tokens were issued to."""

    access_token: str
    """The access token."""
    token_type: str = "Bearer"
    """`Bearer` or `DPoP`."""
    expires_at: float | None = None
    """When the access token expires (seconds since the epoch; None: not said)."""
    refresh_token: str | None = None
    """The refresh token, if one was issued."""
    scopes: tuple[str, ...] = ()
    issuer: str | None = None
    token_endpoint: str | None = None
    resource: str | None = None
    """The resource (RFC 8707) the tokens were issued for."""
    dpop_jkt: str | None = None
    client_id: str | None = None

    @property
    def is_dpop(self) -> bool:
        """Whether the token is DPoP-bound (sent with the DPoP scheme and a proof)."""
        return self.token_type.lower() == "dpop"

    @property
    def expired(self) -> bool:
        """Whether the access token has expired."""
        return self.expires_at is not None and now() >= self.expires_at

    def expires_within(self, seconds: float) -> bool:
        """Whether the access token expires within `seconds` (False when its expiry is unknown)."""
        return self.expires_at is not None and now() >= self.expires_at - seconds

    def to_dict(self) -> dict[str, Any]:
        """The tokens as JSON-representable data (what `FileTokenStorage` writes)."""
        data = asdict(self)
        data["scopes"] = list(self.scopes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenSet:
        """Tokens from `data`, as `to_dict` wrote it (unknown keys are ignored)."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["scopes"] = tuple(s for s in known.get("scopes", ()) if isinstance(s, str))
        return cls(**known)


@dataclass
class ClientInfo:
    """A client identity at one authorization server: pre-registered, from dynamic registration, or
    a client ID metadata document URL. `issuer` binds it to the authorization server that issued it
    (`None` on pre-registered credentials means "bind to the first authorization server used").

    Attributes:
        client_id: the client ID (or the metadata document's URL).
        client_secret: the client secret, for a confidential client.
        token_endpoint_auth_method: how the client authenticates at the token endpoint
            (`client_secret_basic`, `client_secret_post`, `private_key_jwt`, `none`).
        client_secret_expires_at: when the secret expires (seconds since the epoch; 0 or None: never).
        redirect_uris: the redirect URIs registered.
        extra: the rest of the registration response.
    """

    client_id: str
    client_secret: str | None = None
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None
    client_secret_expires_at: float | None = None
    redirect_uris: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def secret_expired(self) -> bool:
        """Whether the client secret has expired (a new registration is then needed)."""
        at = self.client_secret_expires_at
        return at is not None and at > 0 and now() >= at

    def to_dict(self) -> dict[str, Any]:
        """The client as JSON-representable data (what `FileTokenStorage` writes)."""
        data = asdict(self)
        data["redirect_uris"] = list(self.redirect_uris)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClientInfo:
        """A client from `data`, as `to_dict` wrote it (unknown keys are ignored)."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["redirect_uris"] = tuple(u for u in known.get("redirect_uris", ()) if isinstance(u, str))
        return cls(**known)


@runtime_checkable
class TokenStorage(Protocol):
    """Persistence for tokens (keyed by the MCP server's canonical URL) and client registrations
    (keyed by authorization server issuer). Passing `None` deletes the entry."""

    async def get_tokens(self, resource: str) -> TokenSet | None:
        """The tokens kept for `resource` (the MCP server's canonical URL), or None."""
        ...

    async def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        """Keep `tokens` for `resource` (None deletes them)."""
        ...

    async def get_client(self, issuer: str) -> ClientInfo | None:
        """The client registered at authorization server `issuer`, or None."""
        ...

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """Keep `client` for authorization server `issuer` (None deletes it)."""
        ...


class InMemoryTokenStorage:
    """Keeps everything for the life of the process."""

    def __init__(self) -> None:
        self._tokens: dict[str, TokenSet] = {}
        self._clients: dict[str, ClientInfo] = {}

    async def get_tokens(self, resource: str) -> TokenSet | None:
        """The tokens kept for `resource` (the MCP server's canonical URL), or None."""
        return self._tokens.get(resource)

    async def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        """Keep `tokens` for `resource` (None deletes them)."""
        if tokens is None:
            self._tokens.pop(resource, None)
        else:
            self._tokens[resource] = tokens

    async def get_client(self, issuer: str) -> ClientInfo | None:
        """The client registered at authorization server `issuer`, or None."""
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """Keep `client` for authorization server `issuer` (None deletes it)."""
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client


class FileTokenStorage:
    """One JSON file, written atomically (temporary file + rename) with mode 0600.

    A missing parent directory is created with mode 0700. An existing file readable by others is
    tightened to 0600 when read. An unreadable or corrupt file counts as empty (and is replaced on the
    next write) rather than breaking the client. Writers in one process are serialized; several
    processes sharing a file may lose each other's updates (last writer wins).

    Args:
        path: the file (`~` is expanded).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = LoopLock()

    async def get_tokens(self, resource: str) -> TokenSet | None:
        """The tokens kept for `resource` (the MCP server's canonical URL), or None."""
        data = await self._read()
        entry = data["tokens"].get(resource)
        return TokenSet.from_dict(entry) if isinstance(entry, dict) else None

    async def set_tokens(self, resource: str, tokens: TokenSet | None) -> None:
        """Keep `tokens` for `resource` (None deletes them)."""
        await self._update("tokens", resource, tokens.to_dict() if tokens else None)

    async def get_client(self, issuer: str) -> ClientInfo | None:
        """The client registered at authorization server `issuer`, or None."""
        data = await self._read()
        entry = data["clients"].get(issuer)
        return ClientInfo.from_dict(entry) if isinstance(entry, dict) else None

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """Keep `client` for authorization server `issuer` (None deletes it)."""
        await self._update("clients", issuer, client.to_dict() if client else None)

    async def _read(self) -> dict[str, dict[str, Any]]:
        async with self._lock.get():
            return await anyio.to_thread.run_sync(self._load)

    async def _update(self, section: str, key: str, value: dict[str, Any] | None) -> None:
        async with self._lock.get():

            def change() -> None:
                data = self._load()
                if value is None:
                    data[section].pop(key, None)
                else:
                    data[section][key] = value
                self._save(data)

            await anyio.to_thread.run_sync(change)

    def _load(self) -> dict[str, dict[str, Any]]:
        empty: dict[str, dict[str, Any]] = {"tokens": {}, "clients": {}}
        try:
            mode = self.path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                os.chmod(self.path, 0o600)
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return empty
        if not isinstance(raw, dict):
            return empty
        for section in ("tokens", "clients"):
            if isinstance(raw.get(section), dict):
                empty[section] = raw[section]
        return empty

    def _save(self, data: dict[str, dict[str, Any]]) -> None:
        directory = self.path.parent
        if not directory.exists():
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=directory)  # mkstemp creates it 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": 1, **data}, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
