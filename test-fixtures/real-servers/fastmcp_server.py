"""A real MCP server built with the Python MCP SDK (`mcp` from PyPI, fetched into a
venv by scripts/fetch-fixtures.sh): FastMCP with the streamable-http transport in
its default, stateful mode, served by uvicorn on 127.0.0.1, as
`FastMCP.run(transport="streamable-http")` serves it, but on a socket bound here
so the port can be 0 (any free one) and reused across a restart.

argv: <port, 0 = any free>
stdout: "listening <url>" once it accepts connections, "session issued <id>" for
each session it opens.
"""

import asyncio
import socket
import sys

import uvicorn
from mcp.server.fastmcp import FastMCP

server = FastMCP("mcpatch-fixture-python", host="127.0.0.1", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


def logging_issued_sessions(app):
    """Print the session id of every answer that opens a session."""

    async def wrapped(scope, receive, send):
        opening = scope["type"] == "http" and not any(
            k.lower() == b"mcp-session-id" for k, _ in scope.get("headers", [])
        )

        async def watch(message):
            if opening and message["type"] == "http.response.start":
                for k, v in message.get("headers", []):
                    if k.lower() == b"mcp-session-id":
                        print(f"session issued {v.decode()}", flush=True)
            await send(message)

        await app(scope, receive, watch)

    return wrapped


async def main(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(
        logging_issued_sessions(server.streamable_http_app()),
        log_level="warning",
        lifespan="on",
    )
    web = uvicorn.Server(config)
    serving = asyncio.create_task(web.serve(sockets=[sock]))
    while not web.started:
        if serving.done():
            serving.result()
            sys.exit(f"uvicorn stopped before it listened on 127.0.0.1:{port}")
        await asyncio.sleep(0.01)
    print(f"listening http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    await serving


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fastmcp_server.py <port>")
    asyncio.run(main(int(sys.argv[1])))
