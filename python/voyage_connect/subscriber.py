"""The notification stream: protocol v2 (default), server-sent events, or the seed's v1, with the
reconnection rules of each ending, acks after the loop's body, and a resumable position."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Literal, Protocol, TypeVar

import httpx

from .connection import Connection, ConnectionEnded, Item, Reset
from .errors import Forbidden, InvalidClient, RequestRefused, SignInRequired, VoyageError
from .event_stream_connection import open_event_stream
from .http import Http
from .reconnect import Closed, Ending, Failed, next_attempt
from .stores import MemoryStore, Store
from .websocket_connection import open_websocket

Transport = Literal["auto", "v2", "sse", "v1"]
TRANSPORTS: tuple[Transport, ...] = ("auto", "v2", "sse", "v1")
POSITION_KEY = "position"
# A connection that hears nothing (no message, ping or comment) this long is replaced, until the
# service's heartbeat taught it the connection's beat (then three missed beats).
SILENCE = 90.0

T = TypeVar("T")


class TokenSource(Protocol):
    """What the subscriber takes tokens from: `access_token()`, and optionally `renew()` for a
    fresh one after the service refused one (ClientCredentials has both)."""

    async def access_token(self) -> str: ...


class _Closed(Exception):
    """close() was called."""


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
        self._connection: Connection | None = None
        self._pending: tuple[Item, Connection | None] | None = None
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
                except ConnectionEnded as end:
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
            connection = await self._unless_closed(self._connect(token, position))
        except ConnectionEnded as end:
            return end.ending
        self._connection = connection
        self._failures = 0
        await self._emit("connected", connection.transport)
        return None

    async def _connect(self, token: str, position: dict[str, Any]) -> Connection:
        if self.transport == "sse":
            return await open_event_stream(self._http, token, position, self.silence)
        return await open_websocket(
            self._http.api,
            token,
            position,
            v2=self.transport == "v2",
            silence=self.silence,
            renew_token=lambda: self._token(renew=True),
            report_error=lambda error: self._emit("error", error),
        )

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

