var McpClient = class {
  serverName;
  serverConfig;
  workspaceContext;
  cliConfig;
  debugMode;
  clientVersion;
  onContextUpdated;
  client;
  transport;
  status = {{STATUS}}.DISCONNECTED;
  /**
   * Session-loss recovery (mcpatch: gemini-cli-session-loss). A stateful Streamable HTTP
   * server that no longer knows this client's session (restart, idle timeout) answers 404,
   * or 400/401 naming the session; the MCP SDK only reports it, keeps the dead session id,
   * and every later call of this server fails. A tool call refused that way asks this
   * client for a new session: one new transport and initialize (without the dead session
   * id), shared by all calls of this server that meet the loss meanwhile, then the server's
   * tools are listed again, and the call is sent once more. Nothing else is sent twice.
   */
  mcpatchRecovery = void 0;
  mcpatchIsSessionLost(error) {
    if (typeof error !== "object" || error === null) return false;
    const message = typeof error.message === "string" ? error.message : "";
    let status = typeof error.status === "number" ? error.status : typeof error.code === "number" ? error.code : void 0;
    if (status === void 0) {
      const http = /^Error POSTing to endpoint \(HTTP (\d{3})\)/.exec(message);
      if (http) status = Number(http[1]);
    }
    if (/\bSSE stream\b/i.test(message)) return false;
    if (status === 404) return true;
    if (status !== 400 && status !== 401) return false;
    return /\bno valid (?:mcp-)?session\b|\b(?:invalid|unknown|expired|missing)(?: or expired)? (?:mcp-)?session\b|\bsession(?:[ -]id)? (?:is )?(?:not found|invalid|unknown|expired)\b|\bsession[ -]id(?: header)? (?:is )?(?:missing|required)\b|\bsession (?:has )?expired\b|\bserver not initialized\b/i.test(message);
  }
  async mcpatchRecoverSession(failed) {
    if (this.mcpatchRecovery) return this.mcpatchRecovery;
    if (this.client !== failed) {
      if (this.client) return this.client;
      throw new Error(`MCP server '${this.serverName}' is not connected`);
    }
    this.mcpatchRecovery = (async () => {
      try {
        failed.onerror = () => {
        };
        this.updateStatus({{STATUS}}.DISCONNECTED);
        await this.connect();
        setTimeout(() => {
          failed.close().catch(() => {
          });
        }, 3e4).unref?.();
        this.cliConfig.emitMcpDiagnostic("info", `MCP server '${this.serverName}' lost the session; started a new one (mcpatch)`, void 0, this.serverName);
        try {
          for (const registries of this.registeredRegistries) {
            const tools = await this.discoverTools(this.cliConfig, registries.toolRegistry.getMessageBus());
            registries.toolRegistry.removeMcpToolsByServer(this.serverName);
            for (const tool of tools) {
              registries.toolRegistry.registerTool(tool);
            }
            registries.toolRegistry.sortTools();
          }
        } catch (error) {
          this.cliConfig.emitMcpDiagnostic("error", `MCP server '${this.serverName}': listing the tools of the new session failed (mcpatch)`, error, this.serverName);
        }
        return this.client;
      } finally {
        this.mcpatchRecovery = void 0;
      }
    })();
    return this.mcpatchRecovery;
  }
