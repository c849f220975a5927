"""mcpgen's generator: pinned MCP schemas in, typed per-version models and dispatch tables out."""
