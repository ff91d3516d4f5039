    async send(message, options) { /* (mcpatch: mcp-sdk-session-loss) provisional: no change yet */
