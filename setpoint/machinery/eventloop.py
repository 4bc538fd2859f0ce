"""The event loop's exception handler every entry point installs: ``setpoint cluster up``
and ``setpoint run`` (``setpoint.cli.eventloop``), the embedded server in any loop
(``serve()``, the testing kit's clusters) and a Manager started by the SDK.

uvloop's TLS protocol reports a write to a socket already closed under it (a peer that hung
up while its last bytes were read: uvloop issues #506, #685) through the loop's exception
handler as "Fatal error on SSL protocol" with a traceback; nothing is lost, the connection
was over. The handler logs that at debug level and hands every other report to the loop's
default handler.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

logger = logging.getLogger(__name__)


def handle_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's default handler, except for uvloop's TLS protocol writing to a socket its
    peer closed (a debug line)."""
    exc = context.get("exception")
    transport = context.get("transport")
    # uvloop's UVHandle._ensure_alive: the socket's handle is gone (is_closing() may not
    # say so when it went by a read error rather than by close())
    if (isinstance(exc, RuntimeError) and transport is not None
            and str(exc).endswith("the handler is closed")):
        logger.debug("connection closed by its peer while TLS wrote to it: %s", exc)
        return
    loop.default_exception_handler(context)


def quiet_closed_tls_writes(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Install :func:`handle_loop_exception` on ``loop`` (the running one by default) unless
    it has a handler already: one its program set is left as it is."""
    loop = loop or asyncio.get_running_loop()
    if loop.get_exception_handler() is None:
        loop.set_exception_handler(handle_loop_exception)
