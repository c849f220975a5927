"""Names the protocol fixes in its text rather than in a schema def: the `_meta` keys of the modern
era, the log levels, the method that opens a handshake-era session, and the kinds of table rows. Pure."""

from __future__ import annotations

# Protocol-level `_meta` keys (fixed by the spec's text, not by a schema def).
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

HANDSHAKE_METHOD = "initialize"  # opens a handshake-era session; it may not be cancelled

REQUEST = "request"
NOTIFICATION = "notification"
