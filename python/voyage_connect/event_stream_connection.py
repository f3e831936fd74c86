"""Server-sent events, for networks whose proxies refuse WebSocket. A notification is confirmed by
the next connection's `Last-Event-ID`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import httpx

from .connection import ConnectionEnded, Item, Notification, Reset
from .http import Http, retry_after_header
from .liveness import Liveness
from .reconnect import Closed, Failed, Refused
from .sse import EventStreamParser

EVENTS_PATH = "/voyage/notification/v1/sse/products"


async def open_event_stream(http: Http, token: str, position: dict[str, Any], silence: float) -> EventStreamConnection:
    """Connects, resuming after `position`; raises ConnectionEnded when it does not open."""
    url = http.url(EVENTS_PATH)
    if position.get("epoch"):
        url += "?" + urlencode({"epoch": position["epoch"]})
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream", "Cache-Control": "no-cache"}
    if "seq" in position:
        headers["Last-Event-ID"] = str(position["seq"])
    # No read timeout: the liveness watch decides when a silent stream is dead.
    request = http.client.build_request("GET", url, headers=headers, timeout=httpx.Timeout(30.0, connect=15.0, read=None))
    try:
        response = await http.client.send(request, stream=True)
    except httpx.HTTPError as error:
        raise ConnectionEnded(Failed(f"cannot connect ({type(error).__name__}: {error})")) from None
    if response.status_code == 200 and response.headers.get("content-type", "").startswith("text/event-stream"):
        return EventStreamConnection(response, silence)
    await response.aclose()
    raise ConnectionEnded(Refused(response.status_code, retry_after_header(response.headers.get("Retry-After"))))


class EventStreamConnection:
    """One server-sent events response."""

    transport = "sse"

    def __init__(self, response: httpx.Response, silence: float) -> None:
        self.response = response
        self.lines: AsyncIterator[str] = response.aiter_lines()
        self.parser = EventStreamParser()
        self.liveness = Liveness(silence)

    async def next(self) -> Item:
        while True:
            given_up = Failed(f"no event or comment for {round(self.liveness.limit)} s: the stream is given up")
            remaining = self.liveness.remaining()
            if remaining <= 0:
                raise ConnectionEnded(given_up)
            try:
                line = await asyncio.wait_for(self.lines.__anext__(), remaining)
            except TimeoutError:
                raise ConnectionEnded(given_up) from None
            except StopAsyncIteration:
                raise ConnectionEnded(Failed("the event stream ended")) from None
            except httpx.HTTPError as error:
                raise ConnectionEnded(Failed(f"the event stream broke ({type(error).__name__})")) from None
            # `: keepalive` is the service's heartbeat (the stream opens with another comment).
            self.liveness.heard(beat=line.startswith(": keepalive"))
            event = self.parser.feed(line)
            if event is None:
                continue
            if event.type == "notification":
                try:
                    data = json.loads(event.data)
                    seq = int(event.id) if event.id else None
                except ValueError:
                    continue
                if isinstance(data, dict):
                    return Notification(seq, data)
            elif event.type == "reset":
                try:
                    reason = json.loads(event.data).get("reason")
                except (ValueError, AttributeError):
                    reason = None
                return Reset(str(reason))
            elif event.type == "token-expired":
                raise ConnectionEnded(Closed(4003, "token expired"))
            elif event.type == "shutdown":
                raise ConnectionEnded(Closed(1001, "shutdown"))

    async def ack(self, seq: int) -> None:
        pass  # an event stream is confirmed by the next connection's Last-Event-ID

    async def close(self) -> None:
        await self.response.aclose()
