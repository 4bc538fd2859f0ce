"""The work queue of the in-process controllers: keys handled on a later turn of the loop.

Store listeners run inside a write and must not write themselves, so a controller's listener
only adds keys here; the queue calls the controller's ``sync`` for each key soon after, once
however many times the key was added meanwhile (client-go's workqueue dedup). A failing sync
is retried with exponential backoff (5 ms doubling up to 60 s, the controller-manager's
default item rate limiter); a sync may also ask to be called again after some seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from setpoint.machinery.errors import StatusError

log = logging.getLogger("setpoint.cluster.controllers")

K = TypeVar("K", bound=Hashable)

BASE_DELAY = 0.005
MAX_DELAY = 60.0


class Retry(Exception):
    """Raised by a sync that cannot finish now for an expected reason: retry with backoff."""


class WorkQueue(Generic[K]):
    """Deduplicated keys processed by ``sync`` on the running event loop.

    ``sync(key)`` returns None when done, or a number of seconds after which it wants to
    see the key again (a controller waiting on time, such as a grace period).
    """

    def __init__(self, name: str, sync: Callable[[K], float | None]) -> None:
        self.name = name
        self._sync = sync
        self._loop = asyncio.get_running_loop()
        self._pending: dict[K, None] = {}  # insertion-ordered set
        self._scheduled = False
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._failures: dict[K, int] = {}
        self._last_error: dict[K, tuple[str, str]] = {}  # a traceback once per distinct error
        self._stopped = False

    def __repr__(self) -> str:
        return f"WorkQueue({self.name!r}, pending={len(self._pending)})"

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, key: K) -> None:
        """Process ``key`` soon (at most once per turn of the loop)."""
        if self._stopped:
            return
        self._pending[key] = None
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._drain)

    def add_after(self, key: K, delay: float) -> None:
        """Process ``key`` after ``delay`` seconds, unless an earlier wake-up is due."""
        if self._stopped:
            return
        when = self._loop.time() + delay
        current = self._timers.get(key)
        if current is not None:
            if current[0] <= when:
                return
            current[1].cancel()
        self._timers[key] = (when, self._loop.call_at(when, self._fire, key))

    def shutdown(self) -> None:
        """Forget every key and timer; later adds are ignored."""
        self._stopped = True
        self._pending.clear()
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def _drain(self) -> None:
        self._scheduled = False
        batch = list(self._pending)
        self._pending.clear()
        for key in batch:
            if self._stopped:
                return
            try:
                again = self._sync(key)
            except Retry as err:
                self._retry(key, err, level=logging.DEBUG)
                continue
            except StatusError as err:  # the API refused: worth a line, not a traceback
                self._retry(key, err, level=logging.WARNING)
                continue
            except Exception as err:
                self._retry(key, err, level=logging.ERROR)
                continue
            self._failures.pop(key, None)
            self._last_error.pop(key, None)
            if again is not None:
                self.add_after(key, again)

    def _retry(self, key: K, err: Exception, *, level: int) -> None:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(BASE_DELAY * 2 ** failures, MAX_DELAY)
        traceback = None
        if level >= logging.ERROR:
            signature = (type(err).__qualname__, str(err))
            if self._last_error.get(key) != signature:
                self._last_error[key] = signature
                traceback = err
        # keys are strings or tuples (the garbage collector's (action, uid)): never a repr
        shown = "/".join(map(str, key)) if isinstance(key, tuple) else key
        log.log(level, "controller=%s key=%s retry_in=%.3f error=%s", self.name, shown, delay,
                err, exc_info=traceback)
        self.add_after(key, delay)
