"""A user's tokens on this device: sign-in (the helper flow, RFC 8628) and the token manager."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypedDict
from urllib.parse import parse_qs, quote, urlsplit

import httpx

from .callback import CallbackListener
from .client_credentials import fresh_token
from .errors import AccessDenied, InvalidClient, RequestRefused, ServiceUnavailable, SignInExpired, SignInRequired
from .http import Http, OnRetry, json_body, oauth_error, refusal, token_body
from .stores import MemoryStore, Store

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# The helper's code poll: every 5 s (or the service's `interval`, if longer).
POLL_INTERVAL = 5.0
# RFC 8628 §3.5: what each slow_down adds to the interval.
SLOW_DOWN_STEP = 5.0
# The helper link's life when the service does not say (STATE_TTL's default).
LINK_TTL = 600.0
STORE_KEY = "user"
# Sent to /sso/introspect to check the client's credentials: 401 for wrong ones, else
# {"active": false}. It is no token, so it reveals nothing.
CREDENTIAL_PROBE = "voyage-connect-sdk-credential-check"


class TokenResponse(TypedDict):
    """What a sign-in returns (and the command prints)."""

    access_token: str
    refresh_token: str | None
    expires_in: int
    scope: str | None


@dataclass(frozen=True)
class DeviceCode:
    """What to show the user in the device flow (RFC 8628 §3.2)."""

    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: int


async def _call(callback: Callable[[Any], Awaitable[None] | None] | None, value: Any) -> None:
    """Calls a callback that may be a plain function or a coroutine function."""
    if callback is None:
        return
    result = callback(value)
    if inspect.isawaitable(result):
        await result


def _pkce() -> tuple[str, str]:
    """RFC 7636: a verifier of 256 random bits and its S256 challenge."""
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class UserTokens:
    """A user's tokens on this device: the token manager.

    Sign the user in once (`sign_in_with_helper` or `sign_in_with_device_code`); then
    `access_token()` hands out a valid access token, refreshing it when it has 60 s or less
    left, one refresh at a time, and saving the rotated refresh token in `store` (under `user`)
    before anyone gets the new access token. `client_secret` is None for a public client.

    Every request (the credentials check, the sign-in link, the polling for the code, the device
    authorization and its polling, the code exchange, refreshes) is retried through network
    errors and 429, 5xx answers; each wait is told first to `on_retry(problem, seconds)` (what
    failed, the seconds until the next try), never the failure that is finally raised.
    """

    def __init__(
        self,
        api: str,
        client_id: str,
        client_secret: str | None = None,
        store: Store | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        on_retry: OnRetry | None = None,
    ) -> None:
        self.client_id = client_id
        self._secret = client_secret
        self.store: Store = store if store is not None else MemoryStore()
        self._http = Http(api, http_client, on_retry)
        # One refresh at a time: concurrent callers wait for it and take its result from the store.
        self._refresh_lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"UserTokens(api={self._http.api!r}, client_id={self.client_id!r})"

    # ----- sign-in -----

    async def sign_in_with_helper(
        self,
        redirect_port: int | None = None,
        redirect_host: str | None = None,
        scope: str | None = None,
        on_address: Callable[[str], Awaitable[None] | None] | None = None,
    ) -> TokenResponse:
        """The helper flow with PKCE (S256). `on_address(url)` gets the address the user opens.

        Without `redirect_port` and `redirect_host` it polls the service for the code every 5 s;
        with either, it listens on `redirect_host:redirect_port` (default `127.0.0.1`, port 0 or
        None: a free one) and takes the code at `/callback` (the client needs a matching
        redirect pattern, e.g. `http://127.0.0.0/8:*/callback`). The client's credentials are
        checked first, so a wrong secret raises InvalidClient before `on_address` is called.
        Raises SignInExpired when the link expires (10 minutes) before the user signed in.
        """
        await self._check_credentials()
        verifier, challenge = _pkce()
        listener: CallbackListener | None = None
        if redirect_port is not None or redirect_host is not None:
            listener = CallbackListener(redirect_host or "127.0.0.1", redirect_port or 0)
            await listener.start()
        try:
            query = f"code_challenge={challenge}&code_challenge_method=S256"
            if listener is not None:
                query += f"&redirect_url={quote(listener.url, safe='')}"
            what = "sign-in link request"
            response = await self._http.request(
                "POST", self._http.url(f"/external/oauth2helper/config/{quote(self.client_id, safe='')}?{query}"), what=what
            )
            if response.status_code == 404:
                raise InvalidClient(f"{what}: the service knows no enabled client {self.client_id!r} (HTTP 404)")
            if response.status_code != 200:
                raise refusal(response, what)
            config = json_body(response, what)
            authorize_url, code_url = config.get("authorize_url"), config.get("code_url")
            if not isinstance(authorize_url, str) or not isinstance(code_url, str):
                raise RequestRefused(200, None, "the answer has no authorize_url or code_url", what)
            ttl = config.get("expires_in")
            deadline = time.monotonic() + (ttl if isinstance(ttl, (int, float)) else LINK_TTL)
            await _call(on_address, authorize_url)
            if listener is not None:
                listener.expected_state = parse_qs(urlsplit(authorize_url).query).get("state", [None])[0]
                try:
                    code = await asyncio.wait_for(asyncio.shield(listener.code), max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    raise SignInExpired("the sign-in link expired before the user signed in") from None
            else:
                interval = config.get("interval")
                code = await self._poll_for_code(code_url, deadline, max(POLL_INTERVAL, interval if isinstance(interval, (int, float)) else 0))
        finally:
            if listener is not None:
                await listener.close()
        form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
        if scope:
            form["scope"] = scope
        if listener is not None:
            form["redirect_uri"] = listener.url
        return await self._token_request(form, "code exchange")

    async def sign_in_with_device_code(
        self,
        scope: str | None = None,
        on_code: Callable[[DeviceCode], Awaitable[None] | None] | None = None,
    ) -> TokenResponse:
        """RFC 8628: `on_code(DeviceCode)` gets what to show the user; polls at the given
        interval, 5 s longer after each `slow_down`. Raises AccessDenied when the user denies,
        SignInExpired when the code expires first. The client needs the device_code grant."""
        what = "device authorization"
        form = self._client_form({"scope": scope} if scope else {})
        response = await self._http.request("POST", self._http.url("/sso/device_authorization"), data=form, what=what)
        if response.status_code != 200:
            raise refusal(response, what)
        body = json_body(response, what)
        device_code, expires_in = body.get("device_code"), body.get("expires_in")
        if not isinstance(device_code, str) or not isinstance(expires_in, (int, float)):
            raise RequestRefused(200, None, "the answer has no device_code or expires_in", what)
        await _call(
            on_code,
            DeviceCode(
                user_code=str(body.get("user_code")),
                verification_uri=str(body.get("verification_uri")),
                verification_uri_complete=body.get("verification_uri_complete"),
                expires_in=int(expires_in),
            ),
        )
        interval = float(body["interval"]) if isinstance(body.get("interval"), (int, float)) else POLL_INTERVAL
        deadline = time.monotonic() + expires_in
        while True:
            await asyncio.sleep(interval)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SignInExpired("the device code expired before the user approved it")
            try:
                poll = await self._http.request(
                    "POST",
                    self._http.url("/sso/token"),
                    data=self._client_form({"grant_type": DEVICE_GRANT, "device_code": device_code}),
                    retry_for=remaining,
                    what="device code poll",
                )
            except ServiceUnavailable:
                raise SignInExpired("the device code expired while the service could not be reached") from None
            if poll.status_code == 200:
                return await self._save(token_body(poll, "device code poll"))
            error, _ = oauth_error(poll)
            if error == "authorization_pending":
                continue
            if error == "slow_down":
                interval += SLOW_DOWN_STEP
                continue
            if error == "access_denied":
                raise AccessDenied("the user denied the device on the verification page")
            if error in ("expired_token", "invalid_grant"):
                raise SignInExpired(f"the device code is no longer valid ({error})")
            raise refusal(poll, "device code poll")

    # ----- the token manager -----

    async def access_token(self) -> str:
        """A valid access token: the stored one, or a refreshed one when it has 60 s or less left.

        Concurrent callers share one refresh. Raises SignInRequired when no user is signed in, or
        the refresh answered `invalid_grant` (the user was signed out: the tokens are forgotten).
        """
        token = fresh_token(await self._saved(), time.time())
        if token is not None:
            return token
        async with self._refresh_lock:
            # Whoever held the lock before may have refreshed already: its result is in the store.
            saved = await self._saved()
            token = fresh_token(saved, time.time())
            if token is not None:
                return token
            refresh_token = saved.get("refresh_token")
            if not isinstance(refresh_token, str):
                raise SignInRequired("the access token expired and there is no refresh token")
            return (await self._token_request({"grant_type": "refresh_token", "refresh_token": refresh_token}, "refresh"))["access_token"]

    async def signed_in(self) -> bool:
        """Whether the store holds this client's user tokens."""
        saved = await self.store.get(STORE_KEY)
        return isinstance(saved, dict) and saved.get("client_id") == self.client_id and isinstance(saved.get("access_token"), str)

    async def sign_out(self) -> None:
        """Forgets the user's tokens, after asking the service to revoke the grant (RFC 7009;
        best effort: the tokens are forgotten also when the service cannot be reached)."""
        saved = await self.store.get(STORE_KEY)
        if isinstance(saved, dict) and saved.get("client_id") == self.client_id:
            token = saved.get("refresh_token") or saved.get("access_token")
            if isinstance(token, str):
                try:
                    await self._http.request("POST", self._http.url("/sso/revoke"), data=self._client_form({"token": token}), retry_for=5, what="revocation")
                except ServiceUnavailable:
                    pass
        await self.store.set(STORE_KEY, None)

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> UserTokens:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        await self.aclose()

    # ----- inside -----

    def _client_form(self, fields: dict[str, str]) -> dict[str, str]:
        """client_secret_post; a public client sends its client_id alone."""
        form = {**fields, "client_id": self.client_id}
        if self._secret is not None:
            form["client_secret"] = self._secret
        return form

    async def _check_credentials(self) -> None:
        """401 from /sso/introspect means a wrong id or secret. A public client cannot introspect:
        its id is checked by the helper's configuration request (404)."""
        if self._secret is None:
            return
        what = "client check"
        response = await self._http.request(
            "POST", self._http.url("/sso/introspect"), data=self._client_form({"token": CREDENTIAL_PROBE}), what=what
        )
        if response.status_code != 200:
            raise refusal(response, what)

    async def _poll_for_code(self, code_url: str, deadline: float, interval: float) -> str:
        """The helper's code poll: 404 until the user signed in, 200 `{code}` once; 429 and
        network errors and 5xx are retried (by Http) for as long as the link lives."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SignInExpired("the sign-in link expired before the user signed in")
            try:
                response = await self._http.request("GET", code_url, retry_for=remaining, what="code poll")
            except ServiceUnavailable:
                raise SignInExpired("the sign-in link expired while the service could not be reached") from None
            if response.status_code == 200:
                code = json_body(response, "code poll").get("code")
                if isinstance(code, str):
                    return code
            elif response.status_code == 400:
                # The state is refused: the link expired (or the service's keys changed).
                raise SignInExpired("the sign-in link is no longer valid")
            elif response.status_code not in (404, 429):
                raise refusal(response, "code poll")
            await asyncio.sleep(min(interval, max(0.0, deadline - time.monotonic())))

    async def _token_request(self, grant: dict[str, str], what: str) -> TokenResponse:
        response = await self._http.request("POST", self._http.url("/sso/token"), data=self._client_form(grant), what=what)
        if response.status_code == 200:
            # A refresh that answered no new refresh token leaves the old one in force.
            return await self._save(token_body(response, what), grant.get("refresh_token"))
        error, _ = oauth_error(response)
        if error == "invalid_grant":
            if grant["grant_type"] == "refresh_token":
                # Signed out, revoked or expired: these tokens will never work again.
                await self.store.set(STORE_KEY, None)
                raise SignInRequired("the service no longer accepts this device's sign-in (invalid_grant)")
            raise SignInExpired("the authorization code was refused (invalid_grant): it expired or was used")
        raise refusal(response, what)

    async def _save(self, body: dict[str, Any], kept_refresh_token: str | None = None) -> TokenResponse:
        """Saves a token response (with `kept_refresh_token` when a refresh answered none); only
        then does anyone get the access token."""
        refresh_token = body.get("refresh_token") or kept_refresh_token
        tokens: TokenResponse = {
            "access_token": body["access_token"],
            "refresh_token": refresh_token if isinstance(refresh_token, str) else None,
            "expires_in": int(body["expires_in"]),
            "scope": body.get("scope") if isinstance(body.get("scope"), str) else None,
        }
        await self.store.set(STORE_KEY, {**tokens, "client_id": self.client_id, "expires_at": time.time() + tokens["expires_in"]})
        return tokens

    async def _saved(self) -> dict[str, Any]:
        saved = await self.store.get(STORE_KEY)
        if not isinstance(saved, dict) or saved.get("client_id") != self.client_id or not isinstance(saved.get("access_token"), str):
            raise SignInRequired("no user is signed in on this device")
        return saved
