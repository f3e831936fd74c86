"""The WebSocket stream: protocol v2 (seq, acks, resume, in-band token replacement) or the seed's v1
(one notification per message)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.protocol import Event
from websockets.typing import Subprotocol

from .connection import ConnectionEnded, Item, Notification, Reset
from .errors import VoyageError
from .http import USER_AGENT, retry_after_header
from .liveness import Liveness
from .reconnect import Closed, Failed, Refused

STREAM_PATH = "/voyage/notification/v1/ws/products"
V2 = "voyage.v2"
OPEN_TIMEOUT = 30.0


async def open_websocket(
    api: str,
    token: str,
    position: dict[str, Any],
    *,
    v2: bool,
    silence: float,
    renew_token: Callable[[], Awaitable[str]],
    report_error: Callable[[Exception], Awaitable[None]],
) -> WebSocketConnection:
    """Connects (v2 resumes after `position`); raises ConnectionEnded when it does not open.
    `renew_token` serves v2's `expiring`; `report_error` hears when that fails."""
    url = api.replace("http", "ws", 1) + STREAM_PATH
    if v2 and "seq" in position:
        url += "?" + urlencode({"after": position["seq"], **({"epoch": position["epoch"]} if position.get("epoch") else {})})
    try:
        ws = await connect(
            url,
            additional_headers={"Authorization": f"Bearer {token}"},
            subprotocols=[Subprotocol(V2)] if v2 else None,
            compression="deflate",
            user_agent_header=USER_AGENT,
            open_timeout=OPEN_TIMEOUT,
            # The service's heartbeat and the liveness watch notice a dead link; the client's
            # own pings would cost bytes on a paid link for nothing more.
            ping_interval=None,
            create_connection=_WatchedConnection,
        )
    except InvalidStatus as refused:
        response = refused.response
        raise ConnectionEnded(Refused(response.status_code, retry_after_header(response.headers.get("Retry-After")))) from None
    except (TimeoutError, OSError, InvalidHandshake) as error:
        raise ConnectionEnded(Failed(f"cannot connect ({type(error).__name__}: {error})")) from None
    assert isinstance(ws, _WatchedConnection)
    return WebSocketConnection(ws, silence, renew_token, report_error)


class _WatchedConnection(ClientConnection):
    """A ClientConnection that tells its liveness of every frame it receives (pings included,
    which the library answers by itself and never hands to recv())."""

    liveness: Liveness | None = None

    def process_event(self, event: Event) -> None:
        super().process_event(event)
        if self.liveness is not None and isinstance(event, Frame):
            # A heartbeat is a ping without payload; v1's delivery pings carry a seq.
            self.liveness.heard(event.opcode is Opcode.PING and not event.data)


class WebSocketConnection:
    """One open WebSocket connection, v1 or v2."""

    def __init__(
        self,
        ws: _WatchedConnection,
        silence: float,
        renew_token: Callable[[], Awaitable[str]],
        report_error: Callable[[Exception], Awaitable[None]],
    ) -> None:
        self.ws = ws
        self.v2 = ws.subprotocol == V2
        self.transport = "v2" if self.v2 else "v1"
        self.liveness = ws.liveness = Liveness(silence)
        self._renew_token = renew_token
        self._report_error = report_error

    async def next(self) -> Item:
        while True:
            remaining = self.liveness.remaining()
            if remaining <= 0:
                self.ws.transport.abort()
                raise ConnectionEnded(Failed(f"no message or ping for {round(self.liveness.limit)} s: the connection is given up"))
            try:
                # In slices of a second: pings (which recv() never returns) move the deadline, and
                # learning the beat brings it nearer. recv() may be cancelled safely: nothing is lost.
                text = await asyncio.wait_for(self.ws.recv(), min(remaining, 1.0))
            except TimeoutError:
                continue
            except ConnectionClosed as closed:
                frame = closed.rcvd
                raise ConnectionEnded(Closed(frame.code, frame.reason) if frame is not None else Failed("the connection was lost")) from None
            if isinstance(text, bytes):
                continue
            try:
                message = json.loads(text)
            except json.JSONDecodeError:
                continue  # not JSON: nothing a device can act on
            if not isinstance(message, dict):
                continue
            if not self.v2:
                return Notification(None, message)
            kind = message.get("type")
            if kind == "notification" and isinstance(message.get("seq"), int) and isinstance(message.get("data"), dict):
                epoch = message.get("epoch")
                return Notification(message["seq"], message["data"], epoch if isinstance(epoch, str) else None)
            if kind == "reset":
                return Reset(str(message.get("reason")))
            if kind == "expiring":
                await self._replace_token()
            # Other types: later versions of the protocol; ignored, as the protocol says.

    async def _replace_token(self) -> None:
        """v2 `expiring`: a fresh token in band, so the stream is never closed with 4003."""
        try:
            token = await self._renew_token()
            await self.ws.send(json.dumps({"type": "token", "access_token": token}))
        except (VoyageError, ConnectionClosed) as error:
            # The stream closes with 4003 at the expiry, and the reconnection gets a token then.
            await self._report_error(error)

    async def ack(self, seq: int) -> None:
        if self.v2:
            try:
                await self.ws.send(json.dumps({"type": "ack", "seq": seq}))
            except ConnectionClosed:
                pass  # the position is saved: the next connection's `after` confirms it

    async def close(self) -> None:
        await self.ws.close()
