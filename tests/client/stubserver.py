"""A plain-HTTP server on loopback for the client's tests: each request head it reads is
answered with what the test's ``answer(head)`` returns, on a connection kept alive until
the client closes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

Answer = Callable[[bytes], Awaitable[bytes]]


@asynccontextmanager
async def stub_server(answer: Answer,
                      on_connection: Callable[[], None] | None = None) -> AsyncIterator[str]:
    """The server's URL while it runs; ``on_connection`` is called for each connection."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if on_connection is not None:
            on_connection()
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                writer.write(await answer(head))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()
