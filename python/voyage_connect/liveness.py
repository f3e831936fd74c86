"""Notices a stream connection that went silent: on a cut satellite link a dead TCP connection can
look open for minutes."""

from __future__ import annotations

import time

# A connection's beat is known once this many heartbeats (WebSocket pings with no payload, SSE
# `: keepalive` comments) came: the longest gap between them (a first beat may come early, as
# the service's timer is set up after the stream opens; a late limit only costs time).
BEATS_TO_LEARN = 2
# Given up after this many beats of silence, and never sooner than the floor.
BEATS_OF_SILENCE = 3
SILENCE_FLOOR = 5.0


class Liveness:
    """Anything heard restarts the clock; the service's heartbeat also teaches the connection's
    beat, after which three missed beats are enough. Until then the limit is `initial` seconds."""

    def __init__(self, initial: float) -> None:
        self.limit = initial
        self._last_heard = time.monotonic()
        self._last_beat: float | None = None
        self._beats = 0
        self._longest = 0.0

    def heard(self, beat: bool = False) -> None:
        now = time.monotonic()
        self._last_heard = now
        if not beat:
            return
        if self._last_beat is not None:
            self._longest = max(self._longest, now - self._last_beat)
        self._last_beat = now
        self._beats += 1
        if self._beats >= BEATS_TO_LEARN:
            self.limit = max(self._longest * BEATS_OF_SILENCE, SILENCE_FLOOR)

    def remaining(self) -> float:
        """Seconds until the connection counts as dead (0 or less: it does)."""
        return self.limit - (time.monotonic() - self._last_heard)
