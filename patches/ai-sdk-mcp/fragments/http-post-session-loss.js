/*
         * (mcpatch: ai-sdk-mcp-session-loss) A GET stream answered 404 made this transport drop a
         * session no POST has found lost (a server without a GET stream may answer its GET so):
         * the request carries that session again, and only a POST answered 404 (or 400/401
         * naming the session) shows a loss, below.
         */
        if (this.sessionId === void 0 && this.mcpatchLastSession && this.mcpatchInitialize !== void 0 && (this.mcpatchRenewal === void 0 || this.mcpatchRenewal.from !== this.mcpatchLastSession)) {
          let sent;
          try {
            sent = typeof init.body === "string" ? JSON.parse(init.body) : void 0;
          } catch {
          }
          if (sent !== null && typeof sent === "object" && !Array.isArray(sent) && sent.method !== "initialize") {
            const restored = new Headers(init.headers);
            restored.set("mcp-session-id", this.mcpatchLastSession);
            init.headers = Object.fromEntries(restored.entries());
            if (typeof this.setSessionId === "function") this.setSessionId(this.mcpatchLastSession);
            else this.sessionId = this.mcpatchLastSession;
          }
        }
        let response = await this.fetchFn(this.url.href, init);
        /*
         * Session-loss recovery (mcpatch: ai-sdk-mcp-session-loss). A stateful Streamable HTTP
         * server that no longer knows this client's session (restart, idle timeout) answers 404,
         * or 400/401 naming the session; this transport only reports it (and on a 404 drops the
         * id), so every later request fails. A request sent on a session this transport had
         * that meets such an answer forgets the id, runs initialize again with the original
         * params (then notifications/initialized), shared by every request that meets the same
         * loss, and is sent once more on the new session. A loss answered to that initialize
         * or to the repeat reaches the caller at once with the server's words; nothing is sent
         * twice after any other answer.
         */
        response = await (async (transport, init, response) => {
          const named = /\bno valid (?:mcp-)?session\b|\b(?:invalid|unknown|expired|missing)(?: or expired)? (?:mcp-)?session\b|\bsession(?:[ -]id)? (?:is )?(?:not found|invalid|unknown|expired)\b|\bsession[ -]id(?: header)? (?:is )?(?:missing|required)\b|\bsession (?:has )?expired\b|\bserver not initialized\b/i;
          let message;
          try {
            message = typeof init.body === "string" ? JSON.parse(init.body) : void 0;
          } catch {
            return response;
          }
          if (message === null || typeof message !== "object" || Array.isArray(message)) return response;
          if (message.method === "initialize") {
            if (response.ok) transport.mcpatchInitialize = message;
            return response;
          }
          const carried = new Headers(init.headers).get("mcp-session-id");
          if (carried) transport.mcpatchLastSession = carried;
          if (!("id" in message) || transport.mcpatchInitialize === void 0) return response;
          // Sent without an id: the transport had dropped it (2.0.x, on a 404), or a new session
          // was starting when it was sent; either way the session it belonged to is the last one.
          const lost = carried || transport.mcpatchLastSession;
          if (!lost) return response;
          if (response.status === 404) {
            // a 404 to a request without an id counts too: this transport had a session there
          } else if (response.status === 400 || response.status === 401) {
            const words = await response.clone().text().catch(() => "");
            if (!named.test(words)) return response;
          } else {
            return response;
          }
          response.body?.cancel().catch(() => {});
          const within = (promise, signal) => signal == null ? promise : new Promise((resolve, reject) => {
            if (signal.aborted) return reject(signal.reason);
            const onAbort = () => reject(signal.reason);
            signal.addEventListener("abort", onAbort, { once: true });
            promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
          });
          const setSession = (id) => {
            if (typeof transport.setSessionId === "function") transport.setSessionId(id);
            else transport.sessionId = id;
          };
          const refused = async (what, answer) => {
            const text = await answer.text().catch(() => "");
            return new Error(`MCP HTTP Transport Error: the server lost the session (HTTP ${response.status}) and refused a new one: ${what} answered HTTP ${answer.status}: ${text}`);
          };
          const reply = async (answer, id) => {
            const type = answer.headers.get("content-type") || "";
            if (type.includes("text/event-stream") && answer.body) {
              const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
              let buffer = "";
              try {
                for (;;) {
                  const { done, value } = await reader.read();
                  if (done) break;
                  buffer += value.replace(/\r\n?/g, "\n");
                  let cut;
                  while ((cut = buffer.indexOf("\n\n")) >= 0) {
                    const event = buffer.slice(0, cut);
                    buffer = buffer.slice(cut + 2);
                    const data = event.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).replace(/^ /, "")).join("\n");
                    let parsed;
                    try {
                      parsed = JSON.parse(data);
                    } catch {
                      continue;
                    }
                    if (parsed && parsed.id === id && ("result" in parsed || "error" in parsed)) return parsed;
                  }
                }
              } finally {
                reader.cancel().catch(() => {});
              }
              return void 0;
            }
            const data = await answer.json().catch(() => void 0);
            return (Array.isArray(data) ? data : [data]).find((parsed) => parsed && parsed.id === id && ("result" in parsed || "error" in parsed));
          };
          const renew = async () => {
            if (transport.sessionId === lost) setSession(void 0);
            try {
              Promise.resolve(transport.inboundSseConnection?.close?.()).catch(() => {});
            } catch {
            }
            transport.inboundSseConnection = void 0;
            const headers = new Headers(init.headers);
            headers.delete("mcp-session-id");
            const request = { method: "POST", signal: transport.abortController?.signal, redirect: transport.redirectMode };
            const answer = await transport.fetchFn(transport.url.href, { ...request, headers: Object.fromEntries(headers.entries()), body: JSON.stringify(transport.mcpatchInitialize) });
            if (!answer.ok) throw await refused("initialize", answer);
            const session = answer.headers.get("mcp-session-id");
            const result = await reply(answer, transport.mcpatchInitialize.id);
            if (result === void 0) throw new Error(`MCP HTTP Transport Error: the server lost the session (HTTP ${response.status}) and its new initialize brought no answer`);
            if (result.error) throw new Error(`MCP HTTP Transport Error: the server lost the session (HTTP ${response.status}) and refused a new one: initialize answered: ${result.error.message ?? JSON.stringify(result.error)}`);
            if (!session) throw new Error(`MCP HTTP Transport Error: the server lost the session (HTTP ${response.status}) and its new initialize gave no session id`);
            setSession(session);
            transport.mcpatchLastSession = session;
            const version = result.result?.protocolVersion;
            if (typeof version === "string" && "protocolVersion" in transport) transport.protocolVersion = version;
            headers.set("mcp-session-id", session);
            if (typeof version === "string" && headers.has("mcp-protocol-version")) headers.set("mcp-protocol-version", version);
            const initialized = await transport.fetchFn(transport.url.href, { ...request, headers: Object.fromEntries(headers.entries()), body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
            if (!initialized.ok) throw await refused("notifications/initialized", initialized);
            await initialized.body?.cancel().catch(() => {});
            if (carried && !transport.inboundSseConnection) {
              if (typeof transport.startInboundSse === "function") transport.startInboundSse();
              else if (typeof transport.openInboundSse === "function") transport.openInboundSse().catch(() => {});
            }
          };
          let renewal = transport.mcpatchRenewal;
          if (renewal === void 0 || renewal.from !== lost) {
            renewal = void 0;
            // A live session other than the one the request carried (or, for a request sent
            // without an id, any live session) is already the new one: only the repeat is left.
            if (!transport.sessionId || transport.sessionId === carried) {
              const done = renew();
              const entry = { from: lost, done };
              transport.mcpatchRenewal = renewal = entry;
              done.catch(() => {
                if (transport.mcpatchRenewal === entry) transport.mcpatchRenewal = void 0;
              });
            }
          }
          if (renewal !== void 0) await within(renewal.done, init.signal);
          if (!transport.sessionId) throw new Error(`MCP HTTP Transport Error: the server lost the session (HTTP ${response.status}) and no new one started`);
          const again = new Headers(init.headers);
          again.set("mcp-session-id", transport.sessionId);
          if (again.has("mcp-protocol-version") && typeof transport.protocolVersion === "string") again.set("mcp-protocol-version", transport.protocolVersion);
          return transport.fetchFn(transport.url.href, { ...init, headers: Object.fromEntries(again.entries()) });
        })(this, init, response);
