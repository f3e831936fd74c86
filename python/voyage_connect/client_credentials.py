"""The client's own tokens (`grant_type=client_credentials`), for the notification stream."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Any

import httpx

from .http import Http, OnRetry, refusal, token_body
from .stores import MemoryStore, Store

# A token is used while it has more than this many seconds left (or half its life, if shorter).
MARGIN = 60.0
STORE_KEY = "client"


def fresh_token(saved: Any, now: float) -> str | None:
    """The access token of a saved record, if it has enough life left to hand out."""
    if not isinstance(saved, dict) or not isinstance(saved.get("access_token"), str):
        return None
    expires_at, lifetime = saved.get("expires_at"), saved.get("expires_in")
    if not isinstance(expires_at, (int, float)):
        return None
    margin = min(MARGIN, lifetime / 2) if isinstance(lifetime, (int, float)) else MARGIN
    return str(saved["access_token"]) if expires_at - now > margin else None


class ClientCredentials:
    """A token source for the client itself (`POST /public/api/oauth2/token`).

    `access_token()` returns a token with more than 60 s left, asking for a new one when needed;
    `renew()` always asks. Tokens are kept in `store` under `client` (with the client id and
    scope they belong to), so a restarted program reuses one that is still good.

    A token request is retried through network errors and 429, 5xx answers for up to 30 s; each
    wait is told first to `on_retry(problem, seconds)` (what failed, the seconds until the next
    try), never the failure that is finally raised.
    """

    def __init__(
        self,
        api: str,
        client_id: str,
        client_secret: str,
        scope: str | None = None,
        store: Store | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        on_retry: OnRetry | None = None,
    ) -> None:
        self.client_id = client_id
        self._secret = client_secret
        self.scope = scope
        self.store: Store = store if store is not None else MemoryStore()
        self._http = Http(api, http_client, on_retry)
        # One token request at a time: callers who find the token stale share the new one.
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        # Never the secret.
        return f"ClientCredentials(api={self._http.api!r}, client_id={self.client_id!r}, scope={self.scope!r})"

    async def access_token(self) -> str:
        """A token with more than 60 s left: the stored one, or a new one."""
        token = await self._stored()
        if token is not None:
            return token
        async with self._lock:
            # Another caller may have renewed it while this one waited.
            token = await self._stored()
            return token if token is not None else await self._request()

    async def renew(self) -> str:
        """A new token, whatever the stored one's life (after the service refused it)."""
        async with self._lock:
            return await self._request()

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> ClientCredentials:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        await self.aclose()

    async def _stored(self) -> str | None:
        """The stored token, if it is this client's, for this scope, and fresh enough."""
        saved = await self.store.get(STORE_KEY)
        if isinstance(saved, dict) and saved.get("client_id") == self.client_id and saved.get("scope_asked") == self.scope:
            return fresh_token(saved, time.time())
        return None

    async def _request(self) -> str:
        form = {"grant_type": "client_credentials", "client_id": self.client_id, "client_secret": self._secret}
        if self.scope:
            form["scope"] = self.scope
        what = "client token request"
        response = await self._http.request("POST", self._http.url("/public/api/oauth2/token"), data=form, what=what)
        if response.status_code != 200:
            raise refusal(response, what)
        body = token_body(response, what)
        token: str = body["access_token"]
        expires_in = body["expires_in"]
        await self.store.set(
            STORE_KEY,
            {
                "client_id": self.client_id,
                "scope_asked": self.scope,
                "access_token": token,
                "expires_in": expires_in,
                "expires_at": time.time() + expires_in,
                "scope": body.get("scope"),
            },
        )
        return token
