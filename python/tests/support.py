"""What the tests need from a running service: its admin CLI, a publisher, and a browser without
JavaScript that signs users in on the service's pages (as test/setup/browserless-login.ts and
test/factories/device-flow.factory.ts do for the TypeScript tests)."""

from __future__ import annotations

import html
import json
import re
import secrets
import shlex
import socket
import subprocess
import uuid
from typing import Any
from urllib.parse import urljoin

import httpx

PASSWORD = "Correct-Horse-9-battery"
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def free_port() -> int:
    """A port of 127.0.0.1 where nothing listens (a connection is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Service:
    """The service under test: `api` (VOYAGE_API) and its admin CLI (VOYAGE_CLI, a shell command prefix)."""

    def __init__(self, api: str, cli: str) -> None:
        self.api = api.rstrip("/")
        self.cli_prefix = cli

    def cli(self, *args: str, stdin: str | None = None) -> Any:
        """Runs one CLI command; its stdout's JSON."""
        done = subprocess.run(
            f"{self.cli_prefix} {shlex.join(args)}", shell=True, input=stdin, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise AssertionError(f"CLI {args[0]} failed ({done.returncode}): {done.stderr.strip()}")
        return json.loads(done.stdout)

    def create_clients(self, specs: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
        """Registers every client of `specs` (name → client:create options) in one CLI call; the
        names get a random suffix. Returns name → {id, secret}."""
        suffix = secrets.token_hex(4)
        lines = [json.dumps({"name": f"py-sdk {name} {suffix}", **options}) for name, options in specs.items()]
        created = self.cli("client:create", "--file", "-", stdin="\n".join(lines) + "\n")
        return {name: {"id": client["client_id"], "secret": client["client_secret"]} for name, client in zip(specs, created, strict=True)}

    def create_user(self, label: str) -> str:
        username = f"py-{label}-{secrets.token_hex(4)}"
        self.cli("user:create", "--username", username, stdin=PASSWORD + "\n")
        return username

    async def client_token_lifetime(self, client: dict[str, str]) -> int:
        """The service's CLIENT_TOKEN_TTL, as a client token's expires_in says it."""
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{self.api}/public/api/oauth2/token",
                data={"grant_type": "client_credentials", "client_id": client["id"], "client_secret": client["secret"]},
            )
        assert response.status_code == 200, response.text
        return int(response.json()["expires_in"])

    async def client_token(self, client: dict[str, str], scope: str | None = None) -> str:
        form = {"grant_type": "client_credentials", "client_id": client["id"], "client_secret": client["secret"]}
        if scope:
            form["scope"] = scope
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{self.api}/public/api/oauth2/token", data=form)
        assert response.status_code == 200, response.text
        return str(response.json()["access_token"])

    async def publish(self, publisher: dict[str, str], recipient: str, count: int = 1) -> list[dict[str, Any]]:
        """Publishes `count` notifications to `recipient` with a fresh notification:publish token
        of `publisher` (the service's CLIENT_TOKEN_TTL may be short); returns what the subscriber
        should get, in order."""
        publisher_token = await self.client_token(publisher, "notification:publish")
        pushed = []
        async with httpx.AsyncClient() as http:
            for _ in range(count):
                body = valid_notification(recipient)
                response = await http.post(
                    f"{self.api}/voyage/notification/v1/notifications", json=body, headers={"Authorization": f"Bearer {publisher_token}"}
                )
                assert response.status_code == 202, response.text
                pushed.append({key: value for key, value in body.items() if key != "recipient"})
        return pushed

    async def introspect(self, client: dict[str, str], token: str) -> dict[str, Any]:
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{self.api}/sso/introspect", data={"token": token, "client_id": client["id"], "client_secret": client["secret"]}
            )
        assert response.status_code == 200, response.text
        return dict(response.json())


def valid_notification(recipient: str) -> dict[str, Any]:
    """test/factories/notification.factory.ts validNotification: fresh ids each call."""
    return {
        "recipient": recipient,
        "correlationId": str(uuid.uuid4()),
        "productName": "RouteAdvice",
        "origin": "RouteConfigurationService",
        "status": "New",
        "statusTimestamp": "2026-11-21T08:30:00.123Z",
        "deliverables": [{"productType": "pdf"}, {"productType": "rtz"}],
        "customerReferenceId": "CUST-REF-42",
        "routeCalculationScheduleId": str(uuid.uuid4()),
        "warnings": ["Image 3 of the PDF could not be generated"],
        "creationDate": "2026-11-21T08:29:59.987Z",
    }


def _hidden(page: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in HIDDEN.findall(page)}


def _cookies(response: httpx.Response, jar: dict[str, str]) -> None:
    for line in response.headers.get_list("set-cookie"):
        name, _, value = line.split(";", 1)[0].partition("=")
        if value and "max-age=0" not in line.lower():
            jar[name] = value
        else:
            jar.pop(name, None)


def _cookie_header(jar: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in jar.items())


async def sign_in_on_login_page(authorize_url: str, username: str, password: str = PASSWORD) -> httpx.Response:
    """Opens the helper's sign-in link and submits the login form; the answer is not followed
    (a 302 to the device's callback, or the "return to your device" page)."""
    async with httpx.AsyncClient(follow_redirects=False) as browser:
        page = await browser.get(authorize_url)
        assert page.status_code == 200, f"login page answered {page.status_code}"
        jar: dict[str, str] = {}
        _cookies(page, jar)
        return await browser.post(
            urljoin(authorize_url, "/sso/authorize"),
            data={**_hidden(page.text), "username": username, "password": password},
            headers={"cookie": _cookie_header(jar)},
        )


async def follow_redirect(response: httpx.Response) -> httpx.Response:
    """What the browser does with the login form's 302: opens the device's callback."""
    assert response.status_code == 302, f"expected a redirect to the device, got {response.status_code}"
    async with httpx.AsyncClient() as browser:
        return await browser.get(response.headers["location"])


async def verify_device(api: str, user_code: str, username: str, decision: str = "approve") -> httpx.Response:
    """The verification page at /sso/device: enter the code, sign in, approve (or deny)."""
    jar: dict[str, str] = {}
    async with httpx.AsyncClient(follow_redirects=False) as browser:
        page = await browser.get(f"{api}/sso/device")
        _cookies(page, jar)
        for fields in ({"user_code": user_code}, {"username": username, "password": PASSWORD}, {"decision": decision}):
            page = await browser.post(f"{api}/sso/device", data={**_hidden(page.text), **fields}, headers={"cookie": _cookie_header(jar)})
            _cookies(page, jar)
            assert page.status_code == 200, f"verification page answered {page.status_code} to {sorted(fields)}"
        return page
