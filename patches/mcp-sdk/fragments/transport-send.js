async send(message, options) {
        // (mcpatch: mcp-sdk-session-loss) session-loss recovery around the release's own send (_mcpatchSendOnce).
        return this._mcpatchSend(message, options);
    }
    /**
     * (mcpatch: mcp-sdk-session-loss) The transport's recovery state, made at first use. A 401 whose body
     * names the session, answering a request that carried a session id, means the session is lost, not that
     * the user must sign in: with an authProvider it becomes an error here, before the SDK's auth flow.
     */
    _mcpatchState() {
        if (this._mcpatch !== undefined) return this._mcpatch;
        const st = { init: undefined, initVersion: undefined, recovery: undefined, cancelled: new Set(), own: new WeakSet(), streamOpened: false, n: 0 };
        this._mcpatch = st;
        if ("_fetch" in this && this._authProvider) {
            const inner = this._fetch;
            this._fetch = async (url, init) => {
                const response = await (inner ?? fetch)(url, init);
                if (response.status !== 401 || !new Headers(init?.headers).has("mcp-session-id")) return response;
                const text = await response.clone().text().catch(() => "");
                if (!this._mcpatchNamesSession(text)) return response;
                await response.body?.cancel().catch(() => {});
                const method = init?.method ?? "GET";
                throw Object.assign(new Error(method === "POST" ? `Error POSTing to endpoint: ${text}` : `Failed to open session stream (HTTP 401): ${text}`), { status: 401, code: 401 });
            };
        }
        const handle = this._handleSseStream;
        if (typeof handle === "function") {
            this._handleSseStream = function (stream, opts, isReconnectable) {
                if (stream && (isReconnectable === true || (isReconnectable === undefined && opts && "resumptionToken" in opts))) st.streamOpened = true;
                return handle.apply(this, arguments);
            };
        }
        return st;
    }
    /** (mcpatch: mcp-sdk-session-loss) Whether a 400/401 body names the session as missing, invalid, unknown, expired or not found. */
    _mcpatchNamesSession(text) {
        return /\bno valid (?:mcp-)?session\b|\b(?:invalid|unknown|expired|missing)(?: or expired)? (?:mcp-)?session\b|\bsession(?:[ -]id)? (?:is )?(?:not found|invalid|unknown|expired)\b|\bsession[ -]id(?: header)? (?:is )?(?:missing|required)\b|\bsession (?:has )?expired\b|\bserver not initialized\b/i.test(String(text ?? ""));
    }
    /**
     * (mcpatch: mcp-sdk-session-loss) Whether a failed send means the server no longer holds the session the
     * request carried. Deliberately narrow: HTTP 404, or 400/401 whose body names the session; nothing else.
     */
    _mcpatchIsSessionLost(error) {
        if (typeof error !== "object" || error === null) return false;
        const message = typeof error.message === "string" ? error.message : "";
        // Releases before 1.24 throw a plain Error naming the status: "Error POSTing to endpoint (HTTP 404): <body>".
        const named = /^Error POSTing to endpoint \(HTTP (\d{3})\)/.exec(message);
        const status = typeof error.status === "number" ? error.status : typeof error.code === "number" ? error.code : named ? Number(named[1]) : undefined;
        if (/\bSSE stream\b/i.test(message)) return false;
        if (status === 404) return true;
        if (status !== 400 && status !== 401) return false;
        return this._mcpatchNamesSession(message);
    }
    /**
     * (mcpatch: mcp-sdk-session-loss) A request or notification the server answered with session loss was
     * refused before it ran: the transport starts a new session with the remembered initialize (one for every
     * message that meets the same loss) and sends it once more, unless its caller gave up meanwhile. A second
     * failure of any kind reaches the caller; nothing is sent twice after any other error.
     */
    async _mcpatchSend(message, options) {
        const st = this._mcpatchState();
        const single = message !== null && typeof message === "object" && !Array.isArray(message) ? message : undefined;
        // The new initialize's own messages come back here only through the release's auth retry (1.x): sent as they are.
        if (single !== undefined && st.own.has(single)) return this._mcpatchSendOnce(message, options);
        if (single?.method === "initialize" && single.id !== undefined) {
            st.init = single;
            st.initVersion = this._protocolVersion;
        }
        if (single?.method === "notifications/cancelled" && single.params?.requestId !== undefined) {
            if (st.cancelled.size > 1000) st.cancelled.clear();
            st.cancelled.add(single.params.requestId);
        }
        // A message sent while a new session is being started waits for it (it would go out with no session id).
        if (st.recovery?.pending && single?.method !== "initialize") await st.recovery.promise.catch(() => {});
        const sentWith = this._sessionId;
        try {
            return await this._mcpatchSendOnce(message, options);
        }
        catch (error) {
            if (sentWith === undefined || single === undefined || typeof single.method !== "string" || single.method === "initialize" ||
                st.init === undefined || options?.resumptionToken || !this._mcpatchIsSessionLost(error)) throw error;
            await this._mcpatchRecover(sentWith);
            if (single.method === "notifications/cancelled") return;
            if (options?.requestSignal?.aborted || this._abortController?.signal.aborted ||
                (single.id !== undefined && st.cancelled.has(single.id))) throw error;
            return await this._mcpatchSendOnce(message, options);
        }
    }
    /** (mcpatch: mcp-sdk-session-loss) One new session per lost one, shared by every message that met the loss. */
    _mcpatchRecover(lostId) {
        const st = this._mcpatchState();
        if (st.recovery?.lostId === lostId) return st.recovery.promise;
        if (this._sessionId !== lostId) return Promise.resolve();
        const recovery = { lostId, pending: true, promise: this._mcpatchReinitialize(lostId) };
        st.recovery = recovery;
        recovery.promise.then(() => {
            recovery.pending = false;
        }, () => {
            recovery.pending = false;
            if (st.recovery === recovery) st.recovery = undefined;
        });
        return recovery.promise;
    }
    /**
     * (mcpatch: mcp-sdk-session-loss) The initialize handshake again, inside the transport: the client's own
     * initialize request (new id) with no session id, its answer kept from the client, the new session id and
     * negotiated protocol version taken, then notifications/initialized. On failure the lost id stays, so the
     * next message that meets the loss tries again; the failure (the server's words) reaches the waiting callers.
     */
    async _mcpatchReinitialize(lostId) {
        const st = this._mcpatchState();
        const savedVersion = this._protocolVersion;
        const id = `mcpatch-reinitialize-${++st.n}`;
        const deliver = this.onmessage;
        let settle;
        const answered = new Promise((resolve, reject) => { settle = { resolve, reject }; });
        answered.catch(() => {}); // awaited below; settled early (timeout, close) while the POST is still out, it must not go unhandled
        const intercept = (msg, extra) => {
            if (msg !== null && typeof msg === "object" && msg.id === id && !("method" in msg)) return settle.resolve(msg);
            return deliver?.call(this, msg, extra);
        };
        const timer = setTimeout(() => settle.reject(new Error("the server did not answer the new initialize within 60 s")), 60000);
        const signal = this._abortController?.signal;
        const onClose = () => settle.reject(new Error("the transport was closed while a new session was being started"));
        signal?.addEventListener("abort", onClose, { once: true });
        this.onmessage = intercept;
        this._sessionId = undefined;
        this._protocolVersion = st.initVersion;
        try {
            const request = { ...st.init, id };
            st.own.add(request);
            await this._mcpatchSendOnce(request);
            const answer = await answered;
            if (answer.error !== undefined) throw Object.assign(new Error(`MCP error ${answer.error.code}: ${answer.error.message}`), { code: answer.error.code, data: answer.error.data });
            const version = answer.result?.protocolVersion;
            if (typeof version === "string") {
                if (typeof this.setProtocolVersion === "function") this.setProtocolVersion(version);
                else this._protocolVersion = version;
            }
            else this._protocolVersion = savedVersion;
            const initialized = { jsonrpc: "2.0", method: "notifications/initialized" };
            st.own.add(initialized);
            await this._mcpatchSendOnce(initialized);
        }
        catch (error) {
            if (this._sessionId === undefined) {
                this._sessionId = lostId;
                this._protocolVersion = savedVersion;
            }
            throw error;
        }
        finally {
            clearTimeout(timer);
            signal?.removeEventListener("abort", onClose);
            if (this.onmessage === intercept) this.onmessage = deliver;
        }
    }
    async _mcpatchSendOnce(message, options) {
