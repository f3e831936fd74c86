"""A server-sent events parser (WHATWG HTML, "Interpreting an event stream"), line by line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    """One dispatched event: its type (`message` when the stream named none), data and last id."""

    type: str
    data: str
    id: str | None


class EventStreamParser:
    """Feed it the stream's lines (without their line ends); it returns an Event at each blank
    line that ends one. Comments (`:`) and unknown fields are skipped; `retry` is ignored (the
    subscriber has its own reconnection rules)."""

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self._data: list[str] = []
        self._type = ""
        self._first = True

    def feed(self, line: str) -> Event | None:
        if self._first:
            # A byte order mark may open the stream.
            self._first = False
            line = line.removeprefix("\ufeff")
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._type = value
        elif field == "id" and "\0" not in value:
            self.last_event_id = value
        return None

    def _dispatch(self) -> Event | None:
        data, kind = self._data, self._type
        self._data, self._type = [], ""
        if not data:
            return None
        return Event(type=kind or "message", data="\n".join(data), id=self.last_event_id)
