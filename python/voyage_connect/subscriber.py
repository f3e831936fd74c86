"""The notification stream: protocol v2 (default), server-sent events, or the seed's v1, with the
reconnection rules of each ending, acks after the loop's body, and a resumable position."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import urlencode

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.protocol import Event
from websockets.typing import Subprotocol

from .errors import Forbidden, InvalidClient, RequestRefused, SignInRequired, VoyageError
from .http import USER_AGENT, Http, retry_after
from .liveness import Liveness
from .reconnect import Closed, Ending, Failed, Refused, next_attempt
from .sse import EventStreamParser
from .stores import MemoryStore, Store

Transport = Literal["auto", "v2", "sse", "v1"]
TRANSPORTS: tuple[Transport, ...] = ("auto", "v2", "sse", "v1")
STREAM_PATH = "/voyage/notification/v1/ws/products"
EVENTS_PATH = "/voyage/notification/v1/sse/products"
POSITION_KEY = "position"
V2 = "voyage.v2"
OPEN_TIMEOUT = 30.0
# A connection that hears nothing (no message, ping or comment) this long is replaced, until the
# service's heartbeat taught it the connection's beat (then three missed beats).
SILENCE = 90.0

T = TypeVar("T")


@dataclass(frozen=True)
class Notification:
    """One notification: `notification` is the seed's fields as published (without `recipient`);
    `seq` its position (None on v1), `epoch` the service database's (v2 only)."""

    seq: int | None
    notification: dict[str, Any]
    epoch: str | None = None


@dataclass(frozen=True)
class Reset:
    """The service's history for this client is incomplete: `reason` is `retention` (what was
    missed expired) or `epoch` (the database was restored or replaced). What follows is what
    remains; resynchronise (e.g. from GET /voyage/notification/v1/notifications)."""

    reason: str


Item = Notification | Reset


class TokenSource(Protocol):
    """What the subscriber takes tokens from: `access_token()`, and optionally `renew()` for a
    fresh one after the service refused one (ClientCredentials has both)."""

    async def access_token(self) -> str: ...


class _End(Exception):
    """A live connection ended."""

    def __init__(self, ending: Ending) -> None:
        super().__init__(str(ending))
        self.ending = ending


class _Closed(Exception):
    """close() was called."""


class _WatchedConnection(ClientConnection):
    """A ClientConnection that tells its liveness of every frame it receives (pings included,
    which the library answers by itself and never hands to recv())."""

    liveness: Liveness | None = None

    def process_event(self, event: Event) -> None:
        super().process_event(event)
        if self.liveness is not None and isinstance(event, Frame):
            # A heartbeat is a ping without payload; v1's delivery pings carry a seq.
            self.liveness.heard(event.opcode is Opcode.PING and not event.data)


class _WebSocket:
    """One open WebSocket connection, v1 or v2."""

    def __init__(self, ws: _WatchedConnection, owner: Subscriber, silence: float) -> None:
        self.ws = ws
        self.owner = owner
        self.v2 = ws.subprotocol == V2
        self.transport = "v2" if self.v2 else "v1"
        self.liveness = ws.liveness = Liveness(silence)

    async def next(self) -> Item:
        while True:
            remaining = self.liveness.remaining()
            if remaining <= 0:
                self.ws.transport.abort()
                raise _End(Failed(f"no message or ping for {round(self.liveness.limit)} s: the connection is given up"))
            try:
                # In slices of a second: pings (which recv() never returns) move the deadline, and
                # learning the beat brings it nearer. recv() may be cancelled safely: nothing is lost.
                text = await asyncio.wait_for(self.ws.recv(), min(remaining, 1.0))
            except TimeoutError:
                continue
            except ConnectionClosed as closed:
                frame = closed.rcvd
                raise _End(Closed(frame.code, frame.reason) if frame is not None else Failed("the connection was lost")) from None
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
            token = await self.owner._token(renew=True)
            await self.ws.send(json.dumps({"type": "token", "access_token": token}))
        except (VoyageError, ConnectionClosed) as error:
            # The stream closes with 4003 at the expiry, and the reconnection gets a token then.
            await self.owner._emit("error", error)

    async def ack(self, seq: int) -> None:
        if self.v2:
            try:
                await self.ws.send(json.dumps({"type": "ack", "seq": seq}))
            except ConnectionClosed:
                pass  # the position is saved: the next connection's `after` confirms it

    async def close(self) -> None:
        await self.ws.close()


class _EventStream:
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
                raise _End(given_up)
            try:
                line = await asyncio.wait_for(self.lines.__anext__(), remaining)
            except TimeoutError:
                raise _End(given_up) from None
            except StopAsyncIteration:
                raise _End(Failed("the event stream ended")) from None
            except httpx.HTTPError as error:
                raise _End(Failed(f"the event stream broke ({type(error).__name__})")) from None
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
                raise _End(Closed(4003, "token expired"))
            elif event.type == "shutdown":
                raise _End(Closed(1001, "shutdown"))

    async def ack(self, seq: int) -> None:
        pass  # an event stream is confirmed by the next connection's Last-Event-ID

    async def close(self) -> None:
        await self.response.aclose()


class Subscriber:
    """The notification stream, as an async iterator of Notification and Reset.

        async for item in Subscriber(api, tokens=ClientCredentials(...), store=FileStore(path)):
            ...

    `transport`: `auto` (default: protocol v2, and server-sent events from then on when a proxy
    refuses the WebSocket upgrade), `v2`, `sse`, or `v1` (the seed's stream: no seq, no resume).
    Each notification is confirmed (v2 `ack`; SSE by the next connection's `Last-Event-ID`) and
    its position saved in `store` (under `position`) only when the loop asks for the next one,
    that is after the loop's body for it returned: a crash repeats at most the one being handled.
    (Leaving the loop with `break` does not confirm the last one; `close()` inside the body,
    then letting the body end, does.)

    Every connection attempt takes a token from `tokens` (a fresh one after a 401 or 4003), and
    ends are answered as docs/sdk/README.md's table says. A connection that hears nothing for
    `silence` seconds (90; three of the service's heartbeats once it has heard two) is replaced:
    set it above three heartbeats for a client whose heartbeat is longer than 30 s.

    Callbacks (plain or async functions): `on_connected(transport)` (`v2`, `sse` or `v1`),
    `on_closed(code, reason)` (an open connection's close; an event stream's `token-expired` is
    4003, `shutdown` 1001), `on_reconnecting(delay_seconds, why)`, `on_error(error)` (a token
    that could not be had or replaced: the subscriber keeps going). `subscriber.transport` is
    the transport in use: `sse` after auto's fallback.

    Errors no reconnection mends are raised from the loop: InvalidClient, Forbidden (the client
    may not subscribe), SignInRequired, RequestRefused.
    """

    def __init__(
        self,
        api: str,
        tokens: TokenSource,
        transport: Transport = "auto",
        store: Store | None = None,
        client_id: str | None = None,
        *,
        silence: float = SILENCE,
        on_connected: Callable[[str], Awaitable[None] | None] | None = None,
        on_closed: Callable[[int, str], Awaitable[None] | None] | None = None,
        on_reconnecting: Callable[[float, str], Awaitable[None] | None] | None = None,
        on_error: Callable[[Exception], Awaitable[None] | None] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}")
        self.tokens = tokens
        self.store: Store = store if store is not None else MemoryStore()
        # The position belongs to one client: a store shared by mistake does not resume another's.
        self.client_id = client_id if client_id is not None else getattr(tokens, "client_id", None)
        self.silence = silence
        self._auto = transport == "auto"
        # The transport in use: `v2`, `sse` (also after auto's fallback) or `v1`.
        self.transport: str = "v2" if transport == "auto" else transport
        self._http = Http(api, http_client)
        self._callbacks: dict[str, Callable[..., Awaitable[None] | None] | None] = {
            "connected": on_connected,
            "closed": on_closed,
            "reconnecting": on_reconnecting,
            "error": on_error,
        }
        self._connection: _WebSocket | _EventStream | None = None
        self._pending: tuple[Item, _WebSocket | _EventStream | None] | None = None
        self._closing = asyncio.Event()
        self._renew = False
        # Attempts in a row that did not open.
        self._failures = 0

    # ----- the public part -----

    def __aiter__(self) -> Subscriber:
        return self

    async def __anext__(self) -> Item:
        # The previous item's body has returned: confirm it before anything else.
        await self._confirm_pending()
        try:
            while True:
                if self._closing.is_set():
                    raise _Closed
                if self._connection is None:
                    ending = await self._open()
                    if ending is not None:
                        await self._after(ending, opened=False)
                    continue
                connection = self._connection
                try:
                    item = await self._unless_closed(connection.next())
                except _End as end:
                    await self._disconnect()
                    await self._after(end.ending, opened=True)
                    continue
                self._pending = (item, connection)
                return item
        except _Closed:
            await self._disconnect()
            await self._http.aclose()
            raise StopAsyncIteration from None

    async def close(self) -> None:
        """Ends the loop: the current wait stops, the connection closes, and the next
        `__anext__` confirms the item being handled (if its body returned) and stops."""
        self._closing.set()
        await self._disconnect()

    async def __aenter__(self) -> Subscriber:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        await self.close()
        await self._http.aclose()

    # ----- confirmation and position -----

    async def _confirm_pending(self) -> None:
        if self._pending is None:
            return
        (item, connection), self._pending = self._pending, None
        if isinstance(item, Reset):
            # The old position is what the service could not resume from: from now on the
            # service's cursor, which the acks so far have moved.
            await self.store.set(POSITION_KEY, None)
            return
        if item.seq is None:
            return  # v1: confirmed by the WebSocket library's pongs, nothing to keep
        previous = await self._position()
        # An event stream carries no epoch: keep the one a v2 connection saw (same database).
        epoch = item.epoch if item.epoch is not None else previous.get("epoch")
        # Saved before it is confirmed: a crash in between repeats nothing after the restart.
        await self.store.set(POSITION_KEY, {"client_id": self.client_id, "seq": item.seq, "epoch": epoch})
        # Only the connection that sent it may ack it; a later one is told by `after`.
        if connection is not None and connection is self._connection:
            await connection.ack(item.seq)

    async def _position(self) -> dict[str, Any]:
        saved = await self.store.get(POSITION_KEY)
        if isinstance(saved, dict) and saved.get("client_id") == self.client_id and isinstance(saved.get("seq"), int):
            return saved
        return {}

    # ----- connecting -----

    async def _token(self, renew: bool = False) -> str:
        renewer = getattr(self.tokens, "renew", None) if renew else None
        token = await (renewer() if renewer is not None else self.tokens.access_token())
        return str(token)

    async def _open(self) -> Ending | None:
        """One attempt: None once connected, else how it failed."""
        try:
            token = await self._unless_closed(self._token(renew=self._renew))
        except (InvalidClient, Forbidden, SignInRequired, RequestRefused):
            raise  # no reconnection mends these
        except VoyageError as error:
            await self._emit("error", error)
            return Failed(str(error))
        self._renew = False  # the token in hand is a fresh one if one was needed
        position = await self._position() if self.transport != "v1" else {}
        try:
            if self.transport == "sse":
                connection: _WebSocket | _EventStream = await self._unless_closed(self._open_events(token, position))
            else:
                connection = await self._unless_closed(self._open_websocket(token, position))
        except _End as end:
            return end.ending
        self._connection = connection
        self._failures = 0
        await self._emit("connected", connection.transport)
        return None

    async def _open_websocket(self, token: str, position: dict[str, Any]) -> _WebSocket:
        url = self._http.api.replace("http", "ws", 1) + STREAM_PATH
        v2 = self.transport == "v2"
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
            raise _End(Refused(response.status_code, retry_after_header(response.headers.get("Retry-After")))) from None
        except (TimeoutError, OSError, InvalidHandshake) as error:
            raise _End(Failed(f"cannot connect ({type(error).__name__}: {error})")) from None
        assert isinstance(ws, _WatchedConnection)
        return _WebSocket(ws, self, self.silence)

    async def _open_events(self, token: str, position: dict[str, Any]) -> _EventStream:
        url = self._http.url(EVENTS_PATH)
        if position.get("epoch"):
            url += "?" + urlencode({"epoch": position["epoch"]})
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if "seq" in position:
            headers["Last-Event-ID"] = str(position["seq"])
        # No read timeout: the liveness watch decides when a silent stream is dead.
        request = self._http.client.build_request("GET", url, headers=headers, timeout=httpx.Timeout(30.0, connect=15.0, read=None))
        try:
            response = await self._http.client.send(request, stream=True)
        except httpx.HTTPError as error:
            raise _End(Failed(f"cannot connect ({type(error).__name__}: {error})")) from None
        if response.status_code == 200 and response.headers.get("content-type", "").startswith("text/event-stream"):
            return _EventStream(response, self.silence)
        await response.aclose()
        raise _End(Refused(response.status_code, retry_after_header(response.headers.get("Retry-After"))))

    # ----- after an ending -----

    async def _after(self, ending: Ending, opened: bool) -> None:
        """Says what happened and waits as the rules say."""
        after = next_attempt(ending, 0 if opened else self._failures, can_fall_back=self._auto and self.transport == "v2")
        if after.forbidden:
            raise Forbidden(f"subscribing: {after.why}: the client's token lacks the subscribe scope")
        if after.fall_back:
            self.transport = "sse"
        if not opened:
            self._failures += 1
        if after.renew:
            self._renew = True
        if isinstance(ending, Closed) and opened:
            await self._emit("closed", ending.code, ending.reason)
        await self._emit("reconnecting", after.wait, after.why)
        try:
            await asyncio.wait_for(self._closing.wait(), after.wait)
        except TimeoutError:
            return
        raise _Closed

    async def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                await connection.close()
            except Exception:  # closing a broken connection: nothing left to do
                pass

    async def _unless_closed(self, awaitable: Awaitable[T]) -> T:
        """Awaits `awaitable`, unless close() is called first (then raises _Closed)."""
        task = asyncio.ensure_future(awaitable)
        closing = asyncio.ensure_future(self._closing.wait())
        try:
            await asyncio.wait({task, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            if not task.done():
                task.cancel()
                try:
                    await task
                except BaseException:
                    pass
        if task.cancelled():
            raise _Closed
        return task.result()

    async def _emit(self, event: str, *args: Any) -> None:
        callback = self._callbacks.get(event)
        if callback is None:
            return
        try:
            result = callback(*args)
            if inspect.isawaitable(result):
                await result
        except Exception:
            pass  # a failing progress callback must not stop the stream


def retry_after_header(value: str | None) -> float | None:
    """`Retry-After` in seconds (None when absent or unreadable)."""
    if value is None:
        return None
    wait = retry_after(httpx.Response(503, headers={"Retry-After": value}), -1.0)
    return None if wait < 0 else wait
