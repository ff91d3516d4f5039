      // (mcpatch: gemini-cli-session-loss) a call the server refused for a lost session is sent once more on a new one
      const mcpatchSend = (client) => client.callTool({
        name: call.name,
        // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion
        arguments: call.args,
        _meta: { progressToken }
      }, void 0, { timeout: this.timeout });
      let {{RESULT}};
      try {
        {{RESULT}} = await mcpatchSend(this.client);
      } catch (mcpatchError) {
        const mcpatchOwner = this.progressReporter;
        if (typeof mcpatchOwner?.mcpatchRecoverSession !== "function" || !mcpatchOwner.mcpatchIsSessionLost(mcpatchError)) {
          throw mcpatchError;
        }
        let mcpatchClient;
        try {
          mcpatchClient = await mcpatchOwner.mcpatchRecoverSession(this.client);
        } catch {
          throw mcpatchError;
        }
        this.client = mcpatchClient;
        {{RESULT}} = await mcpatchSend(mcpatchClient);
      }
