"""The stream's reconnection rules (docs/sdk/README.md, "Reconnecting"): how long to wait after an
ending, and whether with a new token, or on server-sent events from then on."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

LONGEST_BACKOFF = 60.0


@dataclass(frozen=True)
class Closed:
    """A WebSocket close (or an event stream's last event mapped onto the same codes: `shutdown`
    1001, `token-expired` 4003). `was_open`: the connection had opened."""

    code: int
    reason: str
    was_open: bool = True


@dataclass(frozen=True)
class Refused:
    """An HTTP answer instead of a stream; `retry_after` in seconds when it had one."""

    status: int
    retry_after: float | None = None


@dataclass(frozen=True)
class Failed:
    """The network: refused, reset, timed out, silent for too long."""

    message: str


Ending = Closed | Refused | Failed


@dataclass(frozen=True)
class Next:
    """What to do: wait `wait` seconds, maybe with a new token, maybe on SSE from then on."""

    wait: float
    renew: bool
    why: str
    fall_back: bool = False
    forbidden: bool = False


def next_attempt(ending: Ending, failures: int, can_fall_back: bool, rand: Callable[[], float] = random.random) -> Next:
    """The rules, for the `failures`-th attempt in a row that did not open (0 after a connection
    that opened). Jitter (up to 1 s, 5 s after 1008) keeps a fleet from reconnecting in step."""
    backoff = min(5.0 * 2**failures, LONGEST_BACKOFF)
    if isinstance(ending, Closed):
        if ending.code == 1001:
            return Next(rand(), False, "the instance is stopping: reconnecting at once")
        if ending.code == 4003:
            return Next(1.0, True, "the token expired: a new one, then 1 s")
        if ending.code == 1008:
            return Next(30.0 + rand() * 5, True, "closed by policy (too many connections, or a right taken away): later, with a new token")
        why = f"closed {ending.code}" + (f" ({ending.reason})" if ending.reason else "")
        return Next((5.0 if ending.was_open else backoff) + rand(), False, why)
    if isinstance(ending, Failed):
        return Next(backoff + rand(), False, ending.message)
    status = ending.status
    if status == 401:
        return Next(0.0 if failures == 0 else backoff + rand(), True, "the token was refused (401): a new one")
    if status == 403:
        return Next(0.0, False, "the client may not subscribe (403)", forbidden=True)
    if status in (429, 503):
        wait = ending.retry_after if ending.retry_after is not None else backoff + rand()
        return Next(wait, False, f"the service is busy ({status})")
    # Something other than the service answered the upgrade (a proxy): WebSocket does not pass.
    # A 5xx may be a proxy whose upstream is away for a moment: that is retried, not given up on.
    if can_fall_back and status < 500:
        why = f"the WebSocket upgrade was answered {status} (a proxy that refuses WebSocket?): server-sent events from now on"
        return Next(0.0, False, why, fall_back=True)
    return Next(backoff + rand(), False, f"the service answered {status}")
