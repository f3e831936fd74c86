"""ClientCredentials against the service."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from support import Service

from voyage_connect import ClientCredentials, Forbidden, InvalidClient, MemoryStore

Clients = dict[str, dict[str, str]]


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


async def test_a_token_is_reused_until_renewed(service: Service, clients: Clients) -> None:
    client = clients["credentials"]
    store = MemoryStore()
    async with ClientCredentials(service.api, client["id"], client["secret"], store=store) as tokens:
        first = await tokens.access_token()
        assert await tokens.access_token() == first
        assert claims(first)["client_id"] == client["id"] and "notification:subscribe" in claims(first)["scope"]
        renewed = await tokens.renew()
        assert renewed != first
        assert await tokens.access_token() == renewed
    # Another program on the same store (a restart) uses the stored token.
    async with ClientCredentials(service.api, client["id"], client["secret"], store=store) as again:
        assert await again.access_token() == renewed
    # A store of another client's tokens is not used.
    async with ClientCredentials(service.api, clients["sub-v1"]["id"], clients["sub-v1"]["secret"], store=store) as other:
        assert claims(await other.access_token())["client_id"] == clients["sub-v1"]["id"]


async def test_a_wrong_secret_is_invalid_client(service: Service, clients: Clients) -> None:
    client = clients["credentials"]
    async with ClientCredentials(service.api, client["id"], "wrong-secret") as tokens:
        with pytest.raises(InvalidClient) as caught:
            await tokens.access_token()
    assert "wrong-secret" not in str(caught.value) and "VOYAGE_CLIENT_SECRET" in caught.value.hint
    assert "wrong-secret" not in repr(tokens)


async def test_a_scope_the_client_lacks_is_forbidden(service: Service, clients: Clients) -> None:
    client = clients["credentials"]
    async with ClientCredentials(service.api, client["id"], client["secret"], scope="notification:publish") as tokens:
        with pytest.raises(Forbidden) as caught:
            await tokens.access_token()
    assert "client:update" in caught.value.hint
