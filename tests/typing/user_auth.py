"""OAuth as a user writes it, against the public API only (type-checked strictly in CI): a server
whose HTTP endpoint is protected, with a tool that needs a scope, and a client that signs in."""

from __future__ import annotations

from mcpgen.generated.types import CallToolResult
from mcpgen.runtime import Client, RequestContext, Server
from mcpgen.runtime.auth import AuthInfo, FileTokenStorage, JWTVerifier, OAuth, ProtectedResource, RedirectHandler
from mcpgen.runtime.server.http.app import HttpApp

server = Server("notes")


@server.tool()
def whoami(ctx: RequestContext) -> str:
    info: AuthInfo = ctx.auth  # the token's principal, as the verifier read it
    return info.principal or "anonymous"


@server.tool(scopes=["notes:write"])  # a caller without this scope gets 403 insufficient_scope
def add_note(ctx: RequestContext, text: str) -> str:
    info: AuthInfo = ctx.auth
    return f"{info.subject} noted {text}"


def protection(url: str, issuer: str) -> ProtectedResource:
    """`url`: this endpoint as clients reach it; `issuer`: the authorization server it trusts."""
    return ProtectedResource(
        resource=url,
        authorization_servers=[issuer],
        verifier=JWTVerifier(issuer=issuer, audience=url, jwks_uri=f"{issuer}/jwks"),
        scopes_supported=["notes:read", "notes:write"],
        required_scopes=["notes:read"],
    )


def app(url: str, issuer: str) -> HttpApp:
    return server.http_app(auth=protection(url, issuer))  # or server.run_http(port=..., auth=...)


def first_text(result: CallToolResult) -> str:
    for block in result.content:
        if block.type == "text":
            return block.text
    return ""


async def write_a_note(url: str, token_file: str, redirect_handler: RedirectHandler | None = None) -> str:
    """Sign in on the first request (the browser, unless another handler is given), step up for
    `notes:write`, and keep the tokens in `token_file` for next time."""
    auth = OAuth(redirect_handler=redirect_handler, storage=FileTokenStorage(token_file))
    async with Client(url, auth=auth) as client:
        return first_text(await client.call_tool("add_note", {"text": "hello"}))
