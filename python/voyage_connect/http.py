"""HTTP to the service: one connection pool, timeouts, retries with `Retry-After`, and the mapping
of the service's refusals to the SDK's errors."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import httpx

from ._version import __version__
from .errors import Forbidden, InvalidClient, RequestRefused, ServiceUnavailable, VoyageError

# Slow links (satellite: 600 ms round trips, and TLS on top) need room to connect; a stalled
# answer is given up after 30 s and retried.
TIMEOUT = httpx.Timeout(30.0, connect=15.0)
# How long a request keeps being retried (network errors, 503) before ServiceUnavailable.
RETRY_FOR = 30.0
USER_AGENT = f"voyage-connect-python/{__version__}"

# Told of each temporary failure a request waits out: what failed, and the seconds until it tries
# again (never of the failure that is finally raised).
OnRetry: TypeAlias = Callable[[str, float], None]


def origin(url: str) -> str:
    """scheme://host[:port] of `url`: what errors name, never a path or query (which may hold a state)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def retry_after(response: httpx.Response, default: float) -> float:
    """The answer's `Retry-After` in seconds, else `default`."""
    wait = retry_after_header(response.headers.get("retry-after"))
    return default if wait is None else wait


def retry_after_header(value: str | None) -> float | None:
    """`Retry-After` (delta-seconds or an HTTP date) in seconds; None when absent or unreadable."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def oauth_error(response: httpx.Response) -> tuple[str | None, str | None]:
    """`error` and `error_description` of an RFC 6749 §5.2 body (or the service's `{message}`)."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None, None
    if not isinstance(body, dict):
        return None, None
    error = body.get("error")
    description = body.get("error_description")
    if description is None and isinstance(body.get("message"), (str, list)):
        message = body["message"]
        description = "; ".join(map(str, message)) if isinstance(message, list) else message
    return (error if isinstance(error, str) else None, description if isinstance(description, str) else None)


def refusal(response: httpx.Response, what: str) -> VoyageError:
    """The SDK's error for a refusal the caller has no special meaning for."""
    error, description = oauth_error(response)
    status = response.status_code
    if error == "invalid_client" or (status == 401 and error is None):
        return InvalidClient(f"{what}: the client id or secret is wrong (HTTP {status} invalid_client)")
    if error == "unauthorized_client":
        return Forbidden(f"{what}: the client is not registered for this grant", "register the grant: client:update ID --grant …")
    if status == 403 or error in ("insufficient_scope", "invalid_scope"):
        return Forbidden(f"{what}: refused, HTTP {status} {error or ''}".rstrip() + (f": {description}" if description else ""))
    if status == 503:
        return ServiceUnavailable(f"{what}: the service is unavailable (HTTP 503)")
    return RequestRefused(status, error, description, what)


class Http:
    """The SDK's HTTP client for one service address (`api`), with its own connection pool.

    Requests are retried on network errors, 429, 500, 502, 503 and 504 (after `Retry-After`
    when the answer has one) for `RETRY_FOR` seconds. That is safe for token requests too: a
    single-use code or refresh token that did reach the service before the connection broke
    was used, its answer is lost either way, and presenting it again only revokes the tokens
    that were lost with the answer (reuse detection). Each wait is told to `on_retry(problem,
    seconds)` first, so a person is not left in silence while the service is away."""

    def __init__(self, api: str, client: httpx.AsyncClient | None = None, on_retry: OnRetry | None = None) -> None:
        if not api.startswith(("http://", "https://")):
            raise ValueError("api must be an http:// or https:// address")
        self.api = api.rstrip("/")
        self.on_retry = on_retry
        self._client = client
        self._owns_client = client is None

    def url(self, path: str) -> str:
        return f"{self.api}{path}"

    @property
    def client(self) -> httpx.AsyncClient:
        # Made on first use, inside the running event loop.
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=TIMEOUT, headers={"User-Agent": USER_AGENT}, follow_redirects=False)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def request(
        self,
        method: str,
        url: str,
        *,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        retry_for: float = RETRY_FOR,
        what: str = "request",
    ) -> httpx.Response:
        """One request, retried as the class says; any other answer is returned as it is, and so
        is a 429 still there at the deadline. Raises ServiceUnavailable past `retry_for`."""
        deadline = time.monotonic() + retry_for
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self.client.request(method, url, data=data, headers=headers)
            except httpx.TransportError as error:
                delay = backoff(attempt)
                problem = f"{what}: cannot reach {origin(url)} ({type(error).__name__}: {error})"
                if time.monotonic() + delay > deadline:
                    raise ServiceUnavailable(problem) from None
                self._waiting(problem, delay)
                await asyncio.sleep(delay)
                continue
            if response.status_code not in (429, 500, 502, 503, 504):
                return response
            delay = retry_after(response, backoff(attempt))
            if time.monotonic() + delay > deadline:
                if response.status_code == 429:
                    return response
                raise ServiceUnavailable(f"{what}: {origin(url)} kept answering HTTP {response.status_code}")
            await response.aclose()
            self._waiting(f"{what}: {origin(url)} answered HTTP {response.status_code}", delay)
            await asyncio.sleep(delay)

    def _waiting(self, problem: str, delay: float) -> None:
        if self.on_retry is not None:
            self.on_retry(problem, delay)


def backoff(attempt: int) -> float:
    """1, 2, 4, 8 s, at most 10 s, with up to 20 % of jitter so that a fleet does not retry in step."""
    return min(10.0, 2.0 ** (attempt - 1)) * (1 + random.random() * 0.2)


def token_body(response: httpx.Response, what: str) -> dict[str, Any]:
    """A 200 token response's JSON, checked for `access_token` and `expires_in`."""
    body = json_body(response, what)
    if not isinstance(body.get("access_token"), str) or not isinstance(body.get("expires_in"), (int, float)):
        raise RequestRefused(response.status_code, None, "the answer has no access_token or expires_in", what)
    return body


def json_body(response: httpx.Response, what: str) -> dict[str, Any]:
    """The answer's JSON object, or RequestRefused when it is not one."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        raise RequestRefused(response.status_code, None, "the answer is not a JSON object", what)
    return body
