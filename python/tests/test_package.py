"""The package itself: its version, its public names, its event-stream parser, its file store."""

from __future__ import annotations

import asyncio
import json
import re
import stat
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import voyage_connect
from voyage_connect import FileStore, MemoryStore, liveness, reconnect
from voyage_connect.sse import Event, EventStreamParser

PACKAGE_JSON = Path(__file__).resolve().parents[2] / "package.json"


def test_the_version_is_the_services() -> None:
    assert version("voyage-connect") == voyage_connect.__version__
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M)[1] == voyage_connect.__version__  # type: ignore[index]
    assert json.loads(PACKAGE_JSON.read_text())["version"] == voyage_connect.__version__


def test_every_public_name_is_exported() -> None:
    for name in voyage_connect.__all__:
        assert hasattr(voyage_connect, name), name
    for error in ("InvalidClient", "SignInRequired", "SignInExpired", "AccessDenied", "Forbidden", "ServiceUnavailable", "RequestRefused"):
        cls = getattr(voyage_connect, error)
        assert issubclass(cls, voyage_connect.VoyageError) and cls.hint


def parse(text: str) -> list[Event]:
    parser = EventStreamParser()
    events = [parser.feed(line) for line in text.split("\n")]
    return [event for event in events if event is not None]


def test_the_event_stream_parser_follows_the_whatwg_rules() -> None:
    stream = "\ufeff: keepalive\nid: 7\nevent: notification\ndata: {\"a\":\ndata:1}\n\nevent: reset\ndata: {\"reason\":\"epoch\"}\n\ndata\n\nevent: empty\n\nretry: 10\nid\ndata:x\n\n"
    assert parse(stream) == [
        Event("notification", '{"a":\n1}', "7"),
        Event("reset", '{"reason":"epoch"}', "7"),  # the last id stays until another one
        Event("message", "", "7"),  # a `data` field alone is an empty line of data
        Event("message", "x", ""),  # an empty id resets it; `event` without data dispatches nothing
    ]


async def test_the_file_store_writes_atomically_and_privately(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "state.json"
    store = FileStore(path)
    assert await store.get("user") is None
    await asyncio.gather(*(store.set(f"k{n}", {"n": n}) for n in range(20)))
    await store.set("k3", None)
    again = FileStore(path)
    assert await again.get("k4") == {"n": 4} and await again.get("k3") is None
    assert len(json.loads(path.read_text())) == 19
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]  # no temporary file left


async def test_the_memory_store_hands_out_copies() -> None:
    store = MemoryStore()
    await store.set("position", {"seq": 1})
    got = await store.get("position")
    got["seq"] = 2
    assert await store.get("position") == {"seq": 1}


def test_the_reference_is_up_to_date() -> None:
    script = Path(__file__).resolve().parents[1] / "scripts" / "gen_docs.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_liveness_watch_learns_the_beat(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("voyage_connect.liveness.time.monotonic", lambda: now[0])
    watch = liveness.Liveness(90)
    assert watch.remaining() == 90
    for _ in range(2):  # two heartbeats 5 s apart: three beats of silence, 15 s
        now[0] += 5
        watch.heard(beat=True)
    assert watch.limit == 15
    now[0] += 1
    watch.heard()  # a message restarts the clock, and teaches nothing
    now[0] += 14.5
    assert watch.remaining() == pytest.approx(0.5)
    fast = liveness.Liveness(90)
    fast.heard(beat=True)
    now[0] += 0.1
    fast.heard(beat=True)
    assert fast.limit == liveness.SILENCE_FLOOR


def test_the_reconnection_table() -> None:
    def nxt(ending: reconnect.Ending, failures: int = 0, can_fall_back: bool = True) -> reconnect.Next:
        return reconnect.next_attempt(ending, failures, can_fall_back, rand=lambda: 0.5)

    assert nxt(reconnect.Closed(1001, "")).wait == 0.5 and not nxt(reconnect.Closed(1001, "")).renew
    assert (nxt(reconnect.Closed(4003, "")).wait, nxt(reconnect.Closed(4003, "")).renew) == (1.0, True)
    assert (nxt(reconnect.Closed(1008, "")).wait, nxt(reconnect.Closed(1008, "")).renew) == (32.5, True)
    assert nxt(reconnect.Closed(1013, "too slow")).wait == 5.5
    assert [nxt(reconnect.Failed("down"), failures).wait for failures in range(6)] == [5.5, 10.5, 20.5, 40.5, 60.5, 60.5]
    assert nxt(reconnect.Refused(503, 7.0)).wait == 7.0 and nxt(reconnect.Refused(503)).wait == 5.5
    assert nxt(reconnect.Refused(401)).renew and nxt(reconnect.Refused(401)).wait == 0
    assert nxt(reconnect.Refused(403)).forbidden
    assert nxt(reconnect.Refused(200)).fall_back and nxt(reconnect.Refused(404)).fall_back
    assert not nxt(reconnect.Refused(502)).fall_back and not nxt(reconnect.Refused(404), can_fall_back=False).fall_back
