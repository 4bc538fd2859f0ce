"""The event loop the command line runs its programs on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

logger = logging.getLogger(__name__)


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
    asyncio.get_running_loop().set_exception_handler(handle_loop_exception)
    return await main


def handle_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's default handler, except for uvloop's TLS protocol writing to a socket
    already closed under it (a peer that hung up while its last bytes were read: uvloop
    issues #506, #685): nothing is lost, yet it was a "Fatal error on SSL protocol" and a
    traceback in the middle of ``cluster up``'s output."""
    exc = context.get("exception")
    transport = context.get("transport")
    # uvloop's UVHandle._ensure_alive: the socket's handle is gone (is_closing() may not
    # say so when it went by a read error rather than by close())
    if (isinstance(exc, RuntimeError) and transport is not None
            and str(exc).endswith("the handler is closed")):
        logger.debug("connection closed by its peer while TLS wrote to it: %s", exc)
        return
    loop.default_exception_handler(context)
