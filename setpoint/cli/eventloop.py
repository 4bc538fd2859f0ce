"""The event loop the command line runs its programs on, with the exception handler every
entry point installs (``setpoint.machinery.eventloop``)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from setpoint.machinery.eventloop import quiet_closed_tls_writes

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop where the platform has it: its transports, timers and
    callbacks are C, which is most of an operator's CPU per event outside its own code
    (docs/benchmarks.md, the operator's profile)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_with_handler(main))
    return uvloop.run(_with_handler(main))


async def _with_handler(main: Coroutine[Any, Any, T]) -> T:
    quiet_closed_tls_writes()
    return await main
