"""What every audit backend is (k8s.io/apiserver pkg/audit/types.go ``Backend``, union.go
``Union``).

``process_events`` takes the events of one stage (or a batch) and says whether they were
stored: a bool when it knows at once (a file write), an awaitable of one when it must wait
(a webhook called while the request waits). ``shutdown`` writes or sends what is still
queued, as the apiserver's backends do when it stops."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol

Event = dict[str, Any]
Result = bool | Awaitable[bool]


class Backend(Protocol):
    def process_events(self, events: list[Event]) -> Result: ...

    async def shutdown(self) -> None: ...


async def all_stored(results: list[Result]) -> bool:
    """Whether every backend's result (a bool, or one awaited) says it stored."""
    ok = True
    for result in results:
        ok = (await result if inspect.isawaitable(result) else result) and ok
    return ok


class Union:
    """``audit.Union``: every backend gets every event; stored only if all stored it."""

    def __init__(self, backends: Sequence[Backend]) -> None:
        self.backends = list(backends)

    def __repr__(self) -> str:
        return "union[" + ",".join(repr(b) for b in self.backends) + "]"

    def process_events(self, events: list[Event]) -> Result:
        results = [b.process_events(events) for b in self.backends]
        if any(inspect.isawaitable(r) for r in results):
            return all_stored(results)
        return all(bool(r) for r in results)

    async def shutdown(self) -> None:
        await asyncio.gather(*(b.shutdown() for b in self.backends))
