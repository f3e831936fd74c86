"""A tiny HTTP listener that receives the helper flow's authorization code at `/callback`."""

from __future__ import annotations

import asyncio
import html
from urllib.parse import parse_qs, urlsplit

from .errors import AccessDenied, RequestRefused

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>:root{{color-scheme:light dark}}body{{margin:0;font:16px/1.5 system-ui,sans-serif;display:grid;place-items:center;min-height:100vh;padding:1rem;box-sizing:border-box}}main{{max-width:24rem}}h1{{font-size:1.5rem;margin:0 0 .25rem}}</style>
</head><body><main><h1>{title}</h1><p>{message}</p></main></body></html>
"""


class CallbackListener:
    """Listens on `host:port` (port 0: a free one) and resolves `code` with the first
    `/callback?code=…&state=…` whose state is the one this sign-in expects."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.expected_state: str | None = None
        self.code: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/callback"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            status, title, message = self._answer(head.split(b"\r\n", 1)[0].decode("latin-1"))
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, UnicodeError):
            writer.close()
            return
        body = PAGE.format(title=html.escape(title), message=html.escape(message)).encode()
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    def _answer(self, request_line: str) -> tuple[str, str, str]:
        parts = request_line.split(" ")
        target = urlsplit(parts[1] if len(parts) == 3 else "/")
        if parts[0] != "GET" or target.path != "/callback":
            return "404 Not Found", "Nothing here", "This address only receives sign-ins for the device."
        query = {name: values[0] for name, values in parse_qs(target.query).items()}
        # Only the sign-in this device started: a link someone else made cannot hand it a code.
        if query.get("state") != self.expected_state:
            return "400 Bad Request", "Not this device's sign-in", "Start the sign-in on the device again."
        if self.code.done():
            return "200 OK", "Your device is signed in", "You can close this window."
        if "error" in query:
            refused = query["error"] == "access_denied"
            self.code.set_exception(
                AccessDenied("the user denied the sign-in") if refused else RequestRefused(400, query["error"], query.get("error_description"), "sign-in")
            )
            return "200 OK", "Sign-in did not complete", "Return to the device and start again."
        if not query.get("code"):
            return "400 Bad Request", "No code", "Start the sign-in on the device again."
        self.code.set_result(query["code"])
        return "200 OK", "Your device is signed in", "You can close this window: the device carries on by itself."
