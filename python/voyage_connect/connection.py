"""What the stream's connections (WebSocket, server-sent events) and the subscriber share: the items
a connection yields, how it ends, and what the subscriber asks of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .reconnect import Ending


@dataclass(frozen=True)
class Notification:
    """One notification: `notification` is the seed's fields as published (without `recipient`);
    `seq` its position (None on v1), `epoch` the service database's (v2 only)."""

    seq: int | None
    notification: dict[str, Any]
    epoch: str | None = None


@dataclass(frozen=True)
class Reset:
    """The service's history for this client is incomplete: `reason` is `retention` (what was
    missed expired) or `epoch` (the database was restored or replaced). What follows is what
    remains; resynchronise (e.g. from GET /voyage/notification/v1/notifications)."""

    reason: str


Item = Notification | Reset


class ConnectionEnded(Exception):
    """A connection ended, or did not open: `ending` says how."""

    def __init__(self, ending: Ending) -> None:
        super().__init__(str(ending))
        self.ending = ending


class Connection(Protocol):
    """One open connection; `transport` is `v2`, `v1` or `sse`."""

    transport: str

    async def next(self) -> Item:
        """The next item; raises ConnectionEnded when the connection ends."""
        ...

    async def ack(self, seq: int) -> None: ...

    async def close(self) -> None: ...
