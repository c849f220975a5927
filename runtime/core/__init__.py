"""The core both sides stand on: the transport interface (`transport`), the JSON-RPC session
(`session`: ids, correlation, cancellation, progress, back-pressure), the ordered worker, and the
duplex pipes (`memory`, `stdio`) and the SSE reader (`sse`). It imports only `protocol`."""
