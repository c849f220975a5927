"""The protocol's rules, pure (no I/O, no anyio): the bottom layer of the runtime.

JSON-RPC on the wire (`wire`), the error hierarchy (`errors`), the generated tables
(`tables.VersionRegistry`) and the names the protocol fixes in its text (`keys`), capability
objects (`capabilities`), the eras as rules (`eras`), inbound routing (`routing`), version
negotiation's decisions (`negotiation`), HTTP routing headers (`http_headers`), change
notifications (`changes`), URI templates, elicitation schemas, input requests of multi-round-trip
calls (`input_requests`), sealed request state (`sealing`) and JSON Schema checks (`schema_check`).

It imports nothing else of the runtime: every other package builds on it.
"""
