"""Rate limiters for the workqueue: how long an item waits before it is retried.

The same trio as client-go's ``workqueue`` package: an exponential per-item backoff, an
overall token bucket, and the maximum of several limiters. controller-runtime's default is
``MaxOf(ItemExponential(5 ms, 1000 s), Bucket(10 qps, burst 100))``; see
:func:`default_controller_rate_limiter`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Protocol


class RateLimiter(Protocol):
    """Decides the delay of a retried item and remembers how often it failed."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before ``item`` is handed out again (counts one failure)."""
        ...

    def forget(self, item: Hashable) -> None:
        """``item`` succeeded: its failures no longer count."""
        ...

    def retries(self, item: Hashable) -> int:
        """How many times ``item`` failed since it was last forgotten."""
        ...


class ItemExponentialRateLimiter:
    """``base * 2**failures``, capped at ``max_delay``, counted per item."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def __repr__(self) -> str:
        return f"ItemExponentialRateLimiter(base={self.base}, max_delay={self.max_delay})"

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        # 2**failures overflows a float long after the cap matters; stop computing there
        if failures > 62:
            return self.max_delay
        delay: float = min(self.base * 2**failures, self.max_delay)
        return delay

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def retries(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """A token bucket shared by all items: ``qps`` tokens a second, at most ``burst`` saved.

    Each call reserves the next token, so a burst of failures is spread out in time
    rather than refused.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a token bucket needs qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def __repr__(self) -> str:
        return f"BucketRateLimiter(qps={self.qps}, burst={self.burst})"

    def when(self, item: Hashable) -> float:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        pass

    def retries(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay any of ``limiters`` asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def __repr__(self) -> str:
        return f"MaxOfRateLimiter{self.limiters!r}"

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def retries(self, item: Hashable) -> int:
        return max(limiter.retries(item) for limiter in self.limiters)


def default_controller_rate_limiter() -> RateLimiter:
    """controller-runtime's default: 5 ms doubling to 1000 s per item, 10 qps overall."""
    return MaxOfRateLimiter(ItemExponentialRateLimiter(0.005, 1000.0),
                            BucketRateLimiter(10.0, 100))
