async _startOrAuthSse(...mcpatchArgs) {
        // (mcpatch: mcp-sdk-session-loss) the GET stream that meets a lost session, around the release's own code.
        return this._mcpatchGet(mcpatchArgs);
    }
    /**
     * (mcpatch: mcp-sdk-session-loss) A GET stream answered 404 (or a 401 naming the session) for the session
     * it carried starts the shared new session and ends quietly: the new session's notifications/initialized
     * opens the stream again. Only when a GET stream was opened since the last time: a server that answers
     * every GET with 404 gets no new session from it (the release's own error and retries, as before).
     */
    async _mcpatchGet(args) {
        const st = this._mcpatchState();
        const sentWith = this._sessionId;
        try {
            return await this._mcpatchStartOrAuthSseOnce(...args);
        }
        catch (error) {
            const status = typeof error?.status === "number" ? error.status : typeof error?.code === "number" ? error.code : undefined;
            if (sentWith === undefined || st.init === undefined || !st.streamOpened || this._abortController?.signal.aborted ||
                !(status === 404 || (status === 401 && this._mcpatchNamesSession(error.message)))) throw error;
            st.streamOpened = false;
            this._mcpatchRecover(sentWith).catch((recoverError) => this.onerror?.(recoverError));
        }
    }
    async _mcpatchStartOrAuthSseOnce(options
