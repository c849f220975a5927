"""The client the MCP conformance suite drives (its client leg): connect to the URL given last on
the command line and do what the scenario named in the environment expects.

    MCP_CONFORMANCE_SCENARIO=tools_call python examples/conformance_client.py http://localhost:3000/mcp

- `MCP_CONFORMANCE_SCENARIO`: the scenario; an unknown one (an `auth/*` flow, say) connects, lists
  the tools and calls those that need no arguments.
- `MCP_CONFORMANCE_PROTOCOL_VERSION`: the revision under test. A modern one (2026-07-28) runs the
  client in `auto` mode, which probes and uses the modern era when the server speaks it; an older
  one runs the handshake (`legacy`), the only lifecycle those mock servers know.
- `MCP_CONFORMANCE_CONTEXT`: JSON some scenarios send (the tool calls to replay, credentials).

An `auth/*` scenario protects the server with OAuth: the client gets the authorization flow the
scenario is about (`auth_for`): authorization code + PKCE by default (pre-registered credentials
when the context has them, this client's metadata document URL where the authorization server
takes one, dynamic registration otherwise), or one of the machine-to-machine grants. The mock
authorization servers redirect at once, so the redirect is read without a browser.

It exits 0 when the scenario ran through, 1 with a one-line reason otherwise. Start-up stays cheap:
the suite starts dozens of these at once.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

# This client runs on asyncio. httpcore imports trio whenever it is installed (a quarter of this
# process's start-up): say it is not, since the suite starts dozens of these clients at once.
if "trio" not in sys.modules:
    sys.modules["trio"] = None  # type: ignore[assignment]  # None: "no such module" to the import system

import anyio
from mcpgen.runtime import Client, ClientAdvertising, ClientChecks, InputHandlers, Timeouts, VersionRegistry
from mcpgen.runtime.protocol import wire
from mcpgen.runtime.protocol.eras import Eras

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("conformance-client")
Scenario = Callable[[Client, dict[str, Any]], Awaitable[None]]


# -- what the client answers -------------------------------------------------------------------


def answer_form(schema: dict[str, Any]) -> dict[str, Any]:
    """Accept a form: leave out what has a default (the client fills defaults in), say yes to
    booleans, give the first choice of an enum, a placeholder otherwise."""
    content: dict[str, Any] = {}
    properties: dict[str, dict[str, Any]] = schema.get("properties") or {}
    for name, prop in properties.items():
        if "default" in prop:
            continue
        kind = prop.get("type")
        if "enum" in prop:
            content[name] = prop["enum"][0]
        elif kind == "boolean":
            content[name] = True
        elif kind in ("integer", "number"):
            content[name] = prop.get("minimum", 1)
        elif kind == "string":
            content[name] = "conformance"
    return content


async def elicit(params: Any) -> dict[str, Any]:
    if getattr(params, "mode", "form") == "url":
        return {"action": "accept"}
    return {"action": "accept", "content": answer_form(wire.to_wire(params.requested_schema))}


async def sample(params: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "conformance"}, "model": "conformance-model"}


def arguments_for(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments for a listed tool: a value for each required property (None: one it cannot make)."""
    values: dict[str, Any] = {"string": "us-west1", "integer": 1, "number": 1, "boolean": True}
    properties: dict[str, dict[str, Any]] = schema.get("properties") or {}
    required: list[str] = schema.get("required") or []
    arguments: dict[str, Any] = {}
    for name in required:
        kind = properties.get(name, {}).get("type")
        if kind not in values:
            return None
        arguments[name] = values[kind]
    return arguments


# -- the scenarios -----------------------------------------------------------------------------


def offers(client: Client, feature: str) -> bool:
    """A client only calls what a server offers (a pinned modern version learns nothing: it tries)."""
    caps = client.server_capabilities
    return caps is None or feature in caps


async def list_tools(client: Client) -> list[Any]:
    if not offers(client, "tools"):
        log.info("the server offers no tools")
        return []
    return [tool async for tool in client.tools()]


async def call_each_tool(client: Client, context: dict[str, Any]) -> None:
    for tool in await list_tools(client):
        arguments = arguments_for(wire.to_wire(tool.input_schema))
        if arguments is not None:
            await client.call_tool(tool.name, arguments)


async def add_numbers(client: Client, context: dict[str, Any]) -> None:
    await list_tools(client)
    if offers(client, "tools"):
        await client.call_tool("add_numbers", {"a": 5, "b": 3})


def call_tools(*names: str) -> Scenario:
    async def scenario(client: Client, context: dict[str, Any]) -> None:
        await list_tools(client)
        for name in names:
            await client.call_tool(name, {})

    return scenario


async def just_list(client: Client, context: dict[str, Any]) -> None:
    await list_tools(client)


async def standard_headers(client: Client, context: dict[str, Any]) -> None:
    await call_each_tool(client, context)
    if offers(client, "resources"):
        for resource in [r async for r in client.resources()]:
            await client.read_resource(str(resource.uri))
    if offers(client, "prompts"):
        for prompt in [p async for p in client.prompts()]:
            await client.get_prompt(prompt.name)


async def replay_tool_calls(client: Client, context: dict[str, Any]) -> None:
    await list_tools(client)  # what to mirror into headers comes from the listing
    for call in context.get("toolCalls", []):
        await client.call_tool(call["name"], call.get("arguments") or {})


async def echo_schema(client: Client, context: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in await list_tools(client)}
    schema = wire.to_wire(tools["json_schema_2020_12_tool"].input_schema)
    await client.call_tool("json_schema_echo", {"schema": schema})


SCENARIOS: dict[str, Scenario] = {
    "initialize": just_list,
    "tools_call": add_numbers,
    "request-metadata": add_numbers,
    "elicitation-sep1034-client-defaults": call_tools("test_client_elicitation_defaults"),
    "sse-retry": call_tools("test_reconnection"),
    "sep-2322-client-request-state": call_tools(
        "test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"
    ),
    "http-standard-headers": standard_headers,
    "http-custom-headers": replay_tool_calls,
    "http-invalid-tool-headers": call_each_tool,
    "json-schema-ref-no-deref": just_list,
    "json-schema-2020-12-preservation": echo_schema,
}


# -- authorization -----------------------------------------------------------------------------

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


def auth_for(scenario: str, context: dict[str, Any]) -> httpx.Auth | None:
    """The authorization flow an `auth/*` scenario expects of a client (None for the others)."""
    if not scenario.startswith("auth/"):
        return None
    from mcpgen.runtime import auth

    if scenario.startswith("auth/client-credentials"):
        if "private_key_pem" in context:
            key = auth.SigningKey.from_pem(context["private_key_pem"], context.get("signing_algorithm", "ES256"))
            return auth.ClientCredentials(context["client_id"], signing_key=key)
        return auth.ClientCredentials(context["client_id"], client_secret=context["client_secret"])
    if scenario == "auth/enterprise-managed-authorization":
        return auth.EnterpriseManaged(
            id_token=context["idp_id_token"],
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context.get("idp_client_id"),
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
        )
    if scenario == "auth/wif-jwt-bearer":
        return auth.WorkloadIdentity(context["valid_jwt"], client_id=context.get("client_id"))
    registered = None
    if "client_id" in context:
        registered = auth.ClientInfo(context["client_id"], context.get("client_secret"))
    return auth.OAuth(
        redirect_handler=auth.HeadlessRedirectHandler(REDIRECT_URI),
        client=registered,
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="mcpgen-conformance-client",
    )


async def run(url: str, scenario: str, version: str, context: dict[str, Any]) -> None:
    eras = Eras(VersionRegistry())
    mode = "auto" if version in eras.registry.supported and eras.of(version).self_contained else "handshake"
    client = Client(
        url,
        mode=mode,
        auth=auth_for(scenario, context),
        # some mocks answer initialize with an older handshake-era version
        checks=ClientChecks(older_handshake=True),
        inputs=InputHandlers(roots=["file:///conformance"], sampling=sample, elicitation=elicit),
        timeouts=Timeouts(request=120),
        advertising=ClientAdvertising(info={"name": "mcpgen-conformance-client", "version": "0.1.0"}),
    )
    async with client:
        log.info("connected: protocol %s", client.protocol_version)
        await SCENARIOS.get(scenario, call_each_tool)(client, context)


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if len(sys.argv) < 2:
        print("usage: conformance_client.py URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        anyio.run(run, sys.argv[-1], scenario, version, context)
    except Exception as exc:
        print(f"conformance client ({scenario}): {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
