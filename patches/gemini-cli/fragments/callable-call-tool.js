      // (mcpatch: gemini-cli-session-loss) a call the server refused for a lost session is sent once more on a new one
      const mcpatchSend = (client) => client.callTool({
        name: call.name,
        // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion
        arguments: call.args,
        _meta: { progressToken }
      }, void 0, { timeout: this.timeout });
      const mcpatchOwner = this.progressReporter;
      const mcpatchRecovers = typeof mcpatchOwner?.mcpatchRecoverSession === "function";
      // The client this call is sent on: a session this tool holds that is known lost is replaced first.
      let mcpatchSent = this.client;
      if (mcpatchRecovers && mcpatchOwner.mcpatchLost.has(mcpatchSent)) {
        mcpatchSent = await mcpatchOwner.mcpatchRecoverSession(mcpatchSent);
        this.client = mcpatchSent;
      }
      let {{RESULT}};
      try {
        {{RESULT}} = await mcpatchSend(mcpatchSent);
      } catch (mcpatchError) {
        if (!mcpatchRecovers || !mcpatchOwner.mcpatchIsSessionLost(mcpatchError)) {
          throw mcpatchError;
        }
        let mcpatchClient;
        try {
          mcpatchClient = await mcpatchOwner.mcpatchRecoverSession(mcpatchSent, mcpatchError);
        } catch {
          throw mcpatchError;
        }
        this.client = mcpatchClient;
        {{RESULT}} = await mcpatchSend(mcpatchClient);
      }
