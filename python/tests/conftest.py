"""The tests run against a real service: VOYAGE_API (its address) and VOYAGE_CLI (a shell command
prefix running its admin CLI on the same database) must be set."""

from __future__ import annotations

import os
from typing import Any

import pytest
from support import Service

HOW_TO_RUN = """the Python SDK's tests need a running voyage-connect service. Set:
  VOYAGE_API  its address, e.g. http://127.0.0.1:4710
  VOYAGE_CLI  a shell command prefix running its admin CLI on the same database,
              e.g. 'env DATABASE_URL=postgres://postgres@127.0.0.1:5432/db node dist/cli.js'
Any configuration works (DEVICE_POLL_INTERVAL=1 makes the device-flow tests quicker). E.g.:
  DATABASE_URL=… PORT=4710 HOST=127.0.0.1 node dist/main.js &
  PY=$(sh scripts/python-env.sh | tail -n 1)
  VOYAGE_API=http://127.0.0.1:4710 VOYAGE_CLI="env DATABASE_URL=… node dist/cli.js" "$PY" -m pytest python/tests"""


def pytest_sessionstart(session: pytest.Session) -> None:
    missing = [name for name in ("VOYAGE_API", "VOYAGE_CLI") if not os.environ.get(name)]
    if missing:
        raise pytest.UsageError(f"{' and '.join(missing)} not set: {HOW_TO_RUN}")


@pytest.fixture(scope="session")
def service() -> Service:
    return Service(os.environ["VOYAGE_API"], os.environ["VOYAGE_CLI"])


@pytest.fixture(scope="session")
def clients(service: Service) -> dict[str, dict[str, str]]:
    """Every client the tests use, registered in one CLI call. Each stream test has its own
    subscriber client: a client's notifications and cursor are its own."""
    subscriber: dict[str, Any] = {"grant": "client_credentials", "scope": "notification:subscribe"}
    return service.create_clients(
        {
            "helper": {"redirect": ["http://127.0.0.0/8:*/callback"]},
            "device": {"grant": ["device_code", "refresh_token"]},
            "publisher": {"grant": "client_credentials", "scope": "notification:publish"},
            "credentials": subscriber,
            "sub-v2": subscriber,
            "sub-sse": subscriber,
            "sub-v1": subscriber,
            "sub-resume-v2": subscriber,
            "sub-resume-sse": subscriber,
            "sub-auto-200": subscriber,
            "sub-auto-405": subscriber,
            "sub-reset-v2": subscriber,
            "sub-reset-sse": subscriber,
            "sub-command": subscriber,
            "no-scope": {"grant": "client_credentials", "scope": "something:else"},
            # Pinged every 5 s: a silent connection is noticed soon.
            "sub-silence-v2": {**subscriber, "heartbeat": "5"},
            "sub-silence-sse": {**subscriber, "heartbeat": "5"},
        }
    )


@pytest.fixture(scope="session")
def user(service: Service) -> str:
    return service.create_user("user")
