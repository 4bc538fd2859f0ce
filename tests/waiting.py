"""The tests' one way to wait for a condition: the testing kit's ``wait_for``.

Its timeout is sized for a loaded CI machine (a wait that fails costs its timeout; one that
passes costs only the time the condition takes), and on timeout it names the condition and
shows the last value it returned.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from setpoint.testing import waiting

TIMEOUT = 30.0


async def wait_for(condition: Callable[[], Any | Awaitable[Any]], timeout: float = TIMEOUT,
                   *, max_interval: float = 0.1) -> Any:
    """Wait until ``condition()`` (sync or async) is truthy; return its value."""
    return await waiting.wait_for(condition, timeout=timeout, max_interval=max_interval)


# How long a test lets time pass to show that something does NOT happen (a write, a
# restart, an event). Generous, since on a loaded machine the wrong thing may come late.
QUIET_PERIOD = 0.5


async def quiet_period(seconds: float = QUIET_PERIOD) -> None:
    """Let the system run for ``seconds`` before a test asserts that nothing happened."""
    await asyncio.sleep(seconds)


def quiet_period_blocking(seconds: float = QUIET_PERIOD) -> None:
    """:func:`quiet_period` for a test outside an event loop (one driving real kubectl)."""
    time.sleep(seconds)
