"""Subscriber against the service: v2, server-sent events, v1, resume, auto fallback, reset."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support import Service

from voyage_connect import ClientCredentials, FileStore, Forbidden, MemoryStore, Notification, Reset, Subscriber

Clients = dict[str, dict[str, str]]
Item = Notification | Reset


async def collect(subscriber: Subscriber, count: int, timeout: float = 30) -> list[Item]:
    """The first `count` items; then close() inside the loop's body, so the last one is confirmed too."""
    items: list[Item] = []

    async def run() -> None:
        async for item in subscriber:
            items.append(item)
            if len(items) == count:
                await subscriber.close()

    await asyncio.wait_for(run(), timeout)
    return items


async def nothing_more(subscriber: Subscriber, within: float = 3.0) -> None:
    """The subscriber receives nothing within `within` seconds."""
    try:
        item = await asyncio.wait_for(subscriber.__anext__(), within)
    except TimeoutError:
        return
    finally:
        await subscriber.close()
    raise AssertionError(f"received {item} again")


def notifications(items: list[Item]) -> list[dict[str, Any]]:
    return [item.notification for item in items if isinstance(item, Notification)]


async def connected(events: list[str], timeout: float = 15) -> None:
    async def wait() -> None:
        while not events:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(wait(), timeout)


@pytest.mark.parametrize("transport", ["v2", "sse", "v1"])
async def test_receives_what_was_kept_and_what_comes_live(service: Service, clients: Clients, transport: str) -> None:
    client = clients[f"sub-{transport}"]
    events: list[str] = []
    async with ClientCredentials(service.api, client["id"], client["secret"]) as tokens:
        subscriber = Subscriber(service.api, tokens, transport=transport, on_connected=events.append)  # type: ignore[arg-type]
        pushed = await service.publish(clients["publisher"], client["id"], 2)  # kept until it connects
        receiving = asyncio.create_task(collect(subscriber, 4))
        await connected(events)
        pushed += await service.publish(clients["publisher"], client["id"], 2)  # live
        items = await receiving
    assert notifications(items) == pushed
    assert events == [transport] and subscriber.transport == transport
    seqs = [item.seq for item in items if isinstance(item, Notification)]
    if transport == "v1":
        assert seqs == [None] * 4
    else:
        assert all(isinstance(seq, int) for seq in seqs) and seqs == sorted(set(seqs))  # type: ignore[type-var]


@pytest.mark.parametrize("transport", ["v2", "sse"])
async def test_resumes_from_the_file_without_repeats(service: Service, clients: Clients, transport: str, tmp_path: Path) -> None:
    client = clients[f"sub-resume-{transport}"]
    path = tmp_path / "device.json"
    pushed = await service.publish(clients["publisher"], client["id"], 3)

    async def run(count: int) -> list[Item]:
        store = FileStore(path)  # a new program each time, on the same file
        async with ClientCredentials(service.api, client["id"], client["secret"], store=store) as tokens:
            return await collect(Subscriber(service.api, tokens, transport=transport, store=store), count)  # type: ignore[arg-type]

    first = await run(2)  # three were sent; two were handled
    assert notifications(first) == pushed[:2]
    position = json.loads(path.read_text())["position"]
    assert position["seq"] == first[1].seq and position["client_id"] == client["id"]  # type: ignore[union-attr]

    pushed += await service.publish(clients["publisher"], client["id"], 2)
    second = await run(3)
    assert notifications(second) == pushed[2:]

    store = FileStore(path)
    async with ClientCredentials(service.api, client["id"], client["secret"], store=store) as tokens:
        await nothing_more(Subscriber(service.api, tokens, transport=transport, store=store))  # type: ignore[arg-type]


async def refusing_proxy(upstream: str, status: int) -> asyncio.Server:
    """An HTTP proxy that passes plain HTTP to `upstream` and answers every WebSocket upgrade itself."""
    target = urlsplit(upstream)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        if b"upgrade: websocket" in head.lower():
            body = b"WebSocket is not allowed here"
            writer.write(f"HTTP/1.1 {status} Refused\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            await writer.drain()
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(target.hostname, target.port)
        up_writer.write(head)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    return await asyncio.start_server(serve, "127.0.0.1", 0)


@pytest.mark.parametrize("status", [200, 405])
async def test_auto_falls_back_to_server_sent_events_when_a_proxy_refuses_websocket(
    service: Service, clients: Clients, status: int
) -> None:
    client = clients[f"sub-auto-{status}"]
    proxy = await refusing_proxy(service.api, status)
    api = f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}"
    events: list[str] = []
    reconnections: list[str] = []
    try:
        async with ClientCredentials(api, client["id"], client["secret"]) as tokens:
            subscriber = Subscriber(api, tokens, on_connected=events.append, on_reconnecting=lambda delay, why: reconnections.append(why))
            receiving = asyncio.create_task(collect(subscriber, 2))
            await connected(events)
            pushed = await service.publish(clients["publisher"], client["id"], 2)
            items = await receiving
    finally:
        proxy.close()
    assert notifications(items) == pushed
    assert events == ["sse"] and subscriber.transport == "sse"
    assert reconnections == [f"the WebSocket upgrade was answered {status} (a proxy that refuses WebSocket?): server-sent events from now on"]


@pytest.mark.parametrize("transport", ["v2", "sse"])
async def test_a_reset_is_an_item_of_the_loop(service: Service, clients: Clients, transport: str) -> None:
    # A position from another database (its epoch is not the service's): the service says reset.
    client = clients[f"sub-reset-{transport}"]
    pushed = await service.publish(clients["publisher"], client["id"], 2)
    store = MemoryStore()
    await store.set("position", {"client_id": client["id"], "seq": 1, "epoch": "another-database"})
    async with ClientCredentials(service.api, client["id"], client["secret"]) as tokens:
        items = await collect(Subscriber(service.api, tokens, transport=transport, store=store), 3)  # type: ignore[arg-type]
    assert items[0] == Reset("epoch")
    assert notifications(items) == pushed
    position = await store.get("position")
    assert position["seq"] == items[2].seq and position["epoch"] != "another-database"  # type: ignore[union-attr]


async def test_close_ends_a_waiting_loop(service: Service, clients: Clients) -> None:
    client = clients["credentials"]
    async with ClientCredentials(service.api, client["id"], client["secret"]) as tokens:
        events: list[str] = []
        subscriber = Subscriber(service.api, tokens, on_connected=events.append)

        async def run() -> list[Item]:
            return [item async for item in subscriber]

        loop = asyncio.create_task(run())
        await connected(events)
        await subscriber.close()
        assert await asyncio.wait_for(loop, 5) == []


@pytest.mark.parametrize("transport", ["v2", "sse"])
async def test_a_token_without_the_subscribe_scope_is_forbidden(service: Service, clients: Clients, transport: str) -> None:
    client = clients["no-scope"]
    async with ClientCredentials(service.api, client["id"], client["secret"], scope="something:else") as tokens:
        subscriber = Subscriber(service.api, tokens, transport=transport)  # type: ignore[arg-type]
        with pytest.raises(Forbidden) as caught:
            await asyncio.wait_for(subscriber.__anext__(), 15)
        await subscriber.close()
    assert "client:update" in caught.value.hint


class CuttableProxy:
    """A TCP relay to the service whose open connections can be cut: from then on they carry
    nothing either way but stay open, as a dead satellite link looks. New connections pass."""

    def __init__(self, upstream: str) -> None:
        self.target = urlsplit(upstream)
        self.cuts: list[asyncio.Event] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    def cut(self) -> None:
        for cut in self.cuts:
            cut.set()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cut = asyncio.Event()
        self.cuts.append(cut)
        up_reader, up_writer = await asyncio.open_connection(self.target.hostname, self.target.port)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    if not cut.is_set():
                        sink.write(data)
                        await sink.drain()
            except ConnectionError:
                pass
            if not cut.is_set():
                sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_a_silent_connection_is_given_up_after_three_missed_heartbeats(service: Service, clients: Clients) -> None:
    """A cut link that leaves the connection looking open: after two heartbeats (5 s apart) the
    subscriber knows the beat, and gives the connection up after three missed ones (15 s), long
    before its initial 60 s. Both transports at once, to keep the test short. (Where the
    service's client tokens live under 30 s, connections are replaced before they learn a beat:
    then the initial limit, 8 s, is what gives the connection up.)"""
    token_ttl = await service.client_token_lifetime(clients["sub-silence-v2"])
    learns = token_ttl >= 30
    silence, settle, given_up = (60, 11, "for 15 s") if learns else (8, 2, "for 8 s")

    async def scenario(transport: str) -> None:
        client = clients[f"sub-silence-{transport}"]
        proxy = CuttableProxy(service.api)
        api = await proxy.start()
        events: list[str] = []
        reasons: list[str] = []
        try:
            async with ClientCredentials(api, client["id"], client["secret"]) as tokens:
                subscriber = Subscriber(
                    api, tokens, transport=transport, silence=silence,  # type: ignore[arg-type]
                    on_connected=events.append, on_reconnecting=lambda delay, why: reasons.append(why),
                )
                receiving = asyncio.create_task(collect(subscriber, 1, timeout=60))
                await connected(events)
                await asyncio.sleep(settle)
                assert not [why for why in reasons if "given up" in why], "the heartbeat keeps a live connection"
                connections, seen = len(events), len(reasons)
                proxy.cut()
                cut_at = time.monotonic()
                pushed = await service.publish(clients["publisher"], client["id"], 1)
                items = await receiving
        finally:
            proxy.close()
        assert notifications(items) == pushed
        assert len(events) > connections
        assert given_up in reasons[seen] and "given up" in reasons[seen], reasons
        assert time.monotonic() - cut_at < silence / 4 + 15  # the silence, 5 s and jitter, a new connection

    await asyncio.gather(scenario("v2"), scenario("sse"))
