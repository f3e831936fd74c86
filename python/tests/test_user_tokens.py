"""UserTokens against the service: helper sign-in (polling, redirect), RFC 8628, refresh."""

from __future__ import annotations

import asyncio
import json
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from support import Service, follow_redirect, free_port, sign_in_on_login_page, verify_device

from voyage_connect import (
    AccessDenied,
    DeviceCode,
    FileStore,
    InvalidClient,
    MemoryStore,
    SignInRequired,
    Store,
    UserTokens,
)

Clients = dict[str, dict[str, str]]


class CountingStore:
    """A store that records the keys it is asked to set."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.sets: list[str] = []

    async def get(self, key: str) -> Any:
        return await self.inner.get(key)

    async def set(self, key: str, value: Any) -> None:
        self.sets.append(key)
        await self.inner.set(key, value)


async def expire(store: Store) -> None:
    """As if the access token had reached its last minute: the next access_token() refreshes."""
    saved = await store.get("user")
    await store.set("user", {**saved, "expires_at": time.time() + 30})


async def signed_in(tokens: UserTokens, username: str) -> dict[str, Any]:
    """The helper flow, the user signing in as soon as the address is shown (so the first poll
    finds the code)."""

    async def sign_in(address: str) -> None:
        assert (await sign_in_on_login_page(address, username)).status_code == 200

    return dict(await asyncio.wait_for(tokens.sign_in_with_helper(on_address=sign_in), 30))


async def test_helper_sign_in_by_polling(service: Service, clients: Clients, user: str, tmp_path: Path) -> None:
    helper = clients["helper"]
    path = tmp_path / "device.json"
    browser: list[asyncio.Task[Any]] = []

    def on_address(address: str) -> None:
        # The user signs in on another device while this one polls.
        browser.append(asyncio.create_task(sign_in_on_login_page(address, user)))

    async with UserTokens(service.api, helper["id"], helper["secret"], FileStore(path)) as tokens:
        assert not await tokens.signed_in()
        result = await asyncio.wait_for(tokens.sign_in_with_helper(on_address=on_address), 60)
        page = await browser[0]
        assert page.status_code == 200 and "Return to your device" in page.text
        assert sorted(result) == ["access_token", "expires_in", "refresh_token", "scope"]
        assert result["expires_in"] == 3600 and result["scope"] is None and result["refresh_token"]
        assert await tokens.signed_in()
        assert await tokens.access_token() == result["access_token"]
    introspection = await service.introspect(helper, result["access_token"])
    assert introspection["active"] is True and introspection["client_id"] == helper["id"]
    saved = json.loads(path.read_text())["user"]
    assert saved["refresh_token"] == result["refresh_token"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_helper_sign_in_by_redirect(service: Service, clients: Clients, user: str) -> None:
    helper = clients["helper"]
    browser: list[asyncio.Task[Any]] = []

    async def sign_in_and_come_back(address: str) -> Any:
        return await follow_redirect(await sign_in_on_login_page(address, user))

    def on_address(address: str) -> None:
        browser.append(asyncio.create_task(sign_in_and_come_back(address)))

    async with UserTokens(service.api, helper["id"], helper["secret"]) as tokens:
        result = await asyncio.wait_for(tokens.sign_in_with_helper(redirect_port=0, on_address=on_address), 30)
        callback_page = await browser[0]
        assert callback_page.status_code == 200 and "signed in" in callback_page.text
        assert (await service.introspect(helper, result["access_token"]))["active"] is True
        assert await tokens.access_token() == result["access_token"]


async def test_wrong_secret_is_reported_before_any_address(service: Service, clients: Clients) -> None:
    helper = clients["helper"]
    addresses: list[str] = []
    async with UserTokens(service.api, helper["id"], "not-the-secret") as tokens:
        with pytest.raises(InvalidClient) as caught:
            await tokens.sign_in_with_helper(on_address=addresses.append)
    assert addresses == []
    assert caught.value.hint and "not-the-secret" not in str(caught.value)


async def test_unknown_client_is_invalid_client(service: Service) -> None:
    async with UserTokens(service.api, "no-such-client") as tokens:
        with pytest.raises(InvalidClient):
            await tokens.sign_in_with_helper(on_address=lambda address: None)


async def test_device_code_approved(service: Service, clients: Clients, user: str) -> None:
    device = clients["device"]
    codes: list[DeviceCode] = []
    browser: list[asyncio.Task[Any]] = []

    def on_code(code: DeviceCode) -> None:
        codes.append(code)
        browser.append(asyncio.create_task(verify_device(service.api, code.user_code, user)))

    async with UserTokens(service.api, device["id"], device["secret"]) as tokens:
        result = await asyncio.wait_for(tokens.sign_in_with_device_code(on_code=on_code), 60)
        assert "Device connected" in (await browser[0]).text
        assert codes[0].verification_uri.endswith("/sso/device") and codes[0].expires_in > 0
        assert codes[0].verification_uri_complete and codes[0].user_code in codes[0].verification_uri_complete
        assert result["refresh_token"] and await tokens.signed_in()
        assert await tokens.access_token() == result["access_token"]
    assert (await service.introspect(device, result["access_token"]))["active"] is True


async def test_device_code_denied(service: Service, clients: Clients, user: str) -> None:
    device = clients["device"]
    browser: list[asyncio.Task[Any]] = []

    def on_code(code: DeviceCode) -> None:
        browser.append(asyncio.create_task(verify_device(service.api, code.user_code, user, "deny")))

    async with UserTokens(service.api, device["id"], device["secret"]) as tokens:
        with pytest.raises(AccessDenied):
            await asyncio.wait_for(tokens.sign_in_with_device_code(on_code=on_code), 60)
        await browser[0]
        assert not await tokens.signed_in()


async def test_concurrent_callers_share_one_refresh(service: Service, clients: Clients, user: str) -> None:
    helper = clients["helper"]
    store = CountingStore(MemoryStore())
    async with UserTokens(service.api, helper["id"], helper["secret"], store) as tokens:
        before = await signed_in(tokens, user)
        await expire(store)
        store.sets.clear()
        first, second = await asyncio.gather(tokens.access_token(), tokens.access_token())
    assert first == second != before["access_token"]
    assert store.sets == ["user"], "exactly one refresh, saved once"
    after = await store.get("user")
    assert after["refresh_token"] != before["refresh_token"]
    # The old refresh token is retired, and was not presented twice: the grant is alive.
    assert (await service.introspect(helper, before["refresh_token"]))["active"] is False
    assert (await service.introspect(helper, after["refresh_token"]))["active"] is True
    assert (await service.introspect(helper, first))["active"] is True


async def test_revoked_grant_asks_for_sign_in(service: Service, clients: Clients) -> None:
    helper = clients["helper"]
    username = service.create_user("revoked")
    store = MemoryStore()
    async with UserTokens(service.api, helper["id"], helper["secret"], store) as tokens:
        await signed_in(tokens, username)
        service.cli("grants:revoke", "--username", username)
        await expire(store)
        with pytest.raises(SignInRequired) as caught:
            await tokens.access_token()
        assert caught.value.hint == "sign the user in again"
        assert not await tokens.signed_in()
        with pytest.raises(SignInRequired):
            await tokens.access_token()


class Crash(Exception):
    """The process dying right after the store wrote."""


class CrashingStore(FileStore):
    crash_on_user = False

    async def set(self, key: str, value: Any) -> None:
        await super().set(key, value)
        if key == "user" and self.crash_on_user:
            raise Crash


async def test_a_crash_after_the_save_resumes(service: Service, clients: Clients, user: str, tmp_path: Path) -> None:
    helper = clients["helper"]
    path = tmp_path / "device.json"
    store = CrashingStore(path)
    async with UserTokens(service.api, helper["id"], helper["secret"], store) as tokens:
        before = await signed_in(tokens, user)
        await expire(store)
        store.crash_on_user = True
        with pytest.raises(Crash):
            await tokens.access_token()
    # Nobody got the new access token, but the rotated refresh token is on disk.
    rotated = json.loads(path.read_text())["user"]
    assert rotated["refresh_token"] != before["refresh_token"]
    # A new process on the same file carries on.
    restarted = FileStore(path)
    async with UserTokens(service.api, helper["id"], helper["secret"], restarted) as tokens:
        assert await tokens.signed_in()
        assert await tokens.access_token() == rotated["access_token"]
        await expire(restarted)
        renewed = await tokens.access_token()
    assert renewed != rotated["access_token"]
    assert (await service.introspect(helper, renewed))["active"] is True


async def test_sign_out_forgets_and_revokes(service: Service, clients: Clients, user: str) -> None:
    helper = clients["helper"]
    async with UserTokens(service.api, helper["id"], helper["secret"]) as tokens:
        result = await signed_in(tokens, user)
        await tokens.sign_out()
        assert not await tokens.signed_in()
        with pytest.raises(SignInRequired):
            await tokens.access_token()
    assert (await service.introspect(helper, result["refresh_token"]))["active"] is False


async def test_on_retry_tells_of_each_wait_for_an_unreachable_service(clients: Clients) -> None:
    helper = clients["helper"]
    api = f"http://127.0.0.1:{free_port()}"
    reports: list[tuple[str, float]] = []
    told = asyncio.Event()

    def on_retry(problem: str, seconds: float) -> None:
        reports.append((problem, seconds))
        told.set()

    async with UserTokens(api, helper["id"], helper["secret"], on_retry=on_retry) as tokens:
        call = asyncio.create_task(tokens.sign_in_with_helper())
        # Told at the first failure, not after the ~30 s the call keeps trying.
        await asyncio.wait_for(told.wait(), 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    problem, seconds = reports[0]
    assert api in problem and problem.startswith("client check: cannot reach"), problem
    assert 0 < seconds <= 12
