"""`python -m voyage_connect subscribe|sign-in` as a script runs it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import stat
import sys
from pathlib import Path
from typing import Any

from support import Service, free_port, sign_in_on_login_page

Clients = dict[str, dict[str, str]]


async def command(*args: str, secret: str | None = None) -> asyncio.subprocess.Process:
    env = {key: value for key, value in os.environ.items() if key != "VOYAGE_CLIENT_SECRET"}
    if secret is not None:
        env["VOYAGE_CLIENT_SECRET"] = secret
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "voyage_connect", *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )


async def line_of(stream: asyncio.StreamReader | None, seen: list[str], containing: str, timeout: float = 30) -> str:
    """Reads lines until one contains `containing` (every line read is kept in `seen`)."""
    assert stream is not None

    async def read() -> str:
        while True:
            line = (await stream.readline()).decode()
            if not line:
                raise AssertionError(f"the stream ended before {containing!r}: {seen}")
            seen.append(line.rstrip("\n"))
            if containing in line:
                return line

    return await asyncio.wait_for(read(), timeout)


async def test_subscribe_prints_json_lines_and_resumes_from_its_state_file(
    service: Service, clients: Clients, tmp_path: Path
) -> None:
    client = clients["sub-command"]
    state = tmp_path / "state.json"
    args = ("subscribe", "--api", service.api, "--client-id", client["id"], "--state", str(state))
    pushed = await service.publish(clients["publisher"], client["id"], 2)

    process = await command(*args, secret=client["secret"])
    progress: list[str] = []
    await line_of(process.stderr, progress, "connected (protocol v2)")
    printed = [json.loads(await asyncio.wait_for(process.stdout.readline(), 15)) for _ in pushed]  # type: ignore[union-attr]
    assert [line["notification"] for line in printed] == pushed
    assert all(sorted(line) == ["notification", "seq"] for line in printed)
    # Nothing arrives after the last line was printed: it is confirmed when the loop asks for more.
    await asyncio.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(process.wait(), 15) == 0
    saved = json.loads(state.read_text())
    assert saved["position"]["seq"] == printed[-1]["seq"] and "client" in saved
    assert stat.S_IMODE(state.stat().st_mode) == 0o600

    # Restarted: only what came since.
    pushed = await service.publish(clients["publisher"], client["id"], 1)
    process = await command(*args, secret=client["secret"])
    line: dict[str, Any] = json.loads(await asyncio.wait_for(process.stdout.readline(), 15))  # type: ignore[union-attr]
    assert line["notification"] == pushed[0] and line["seq"] > printed[-1]["seq"]
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 15) == 0


async def test_sign_in_prints_the_address_then_the_tokens(service: Service, clients: Clients, user: str) -> None:
    helper = clients["helper"]
    process = await command("sign-in", "--api", service.api, "--client-id", helper["id"], secret=helper["secret"])
    progress: list[str] = []
    line = await line_of(process.stderr, progress, "Open this address")
    address = line.split(": ", 1)[1].strip()
    assert (await sign_in_on_login_page(address, user)).status_code == 200
    stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    tokens = json.loads(stdout)
    assert sorted(tokens) == ["access_token", "expires_in", "refresh_token", "scope"]
    assert (await service.introspect(helper, tokens["access_token"]))["active"] is True
    if address.startswith(("http://localhost", "http://127.")):
        assert any("FRONTEND_URL" in line for line in progress + stderr.decode().splitlines())


async def test_sign_in_with_a_wrong_secret_exits_1_before_any_address(service: Service, clients: Clients) -> None:
    helper = clients["helper"]
    process = await command("sign-in", "--api", service.api, "--client-id", helper["id"], secret="not-the-secret")
    stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    text = stderr.decode()
    assert process.returncode == 1 and stdout == b""
    assert "Open this address" not in text and "not-the-secret" not in text
    assert text.count("\n") == 1 and text.startswith("error:") and "VOYAGE_CLIENT_SECRET" in text


async def test_sign_in_says_when_it_waits_out_an_unreachable_service(clients: Clients) -> None:
    helper = clients["helper"]
    api = f"http://127.0.0.1:{free_port()}"
    process = await command("sign-in", "--api", api, "--client-id", helper["id"], secret=helper["secret"])
    try:
        progress: list[str] = []
        line = (await line_of(process.stderr, progress, "; trying again in ", timeout=10)).rstrip("\n")
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)
    assert re.fullmatch(rf"client check: cannot reach {re.escape(api)} \(.+\); trying again in \d+\.\d s", line), line


async def test_a_wrong_command_line_exits_2(service: Service, clients: Clients) -> None:
    for args, secret in (
        (("subscribe", "--client-id", "x"), "s"),  # no --api
        (("subscribe", "--api", service.api, "--client-id", "x", "--transport", "carrier-pigeon"), "s"),
        (("subscribe", "--api", service.api, "--client-id", "x"), None),  # no VOYAGE_CLIENT_SECRET
        (("launch",), None),
    ):
        process = await command(*args, secret=secret)
        stdout, _ = await asyncio.wait_for(process.communicate(), 15)
        assert process.returncode == 2, args
        assert stdout == b""
