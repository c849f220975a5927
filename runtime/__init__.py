"""mcpgen's runtime: sessions, transports and version negotiation over the generated tables."""
