"""The event loop the command line runs its programs on."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop where the platform has it: its transports, timers and
    callbacks are C, which is most of an operator's CPU per event outside its own code
    (docs/benchmarks.md, the operator's profile)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
