"""The command line's event loop: a peer hanging up is no traceback on the operator's or
the cluster's terminal."""

from __future__ import annotations

import asyncio
import logging

import pytest

from setpoint.cli.eventloop import run


def test_a_write_to_a_socket_its_peer_closed_is_no_fatal_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """``setpoint cluster up`` printed "Fatal error on SSL protocol" and a uvloop traceback
    ("unable to perform operation on <TCPTransport closed=True ...>; the handler is
    closed") once in about two starts: uvloop's SSLProtocol wrote the TLS answer to a
    connection its peer had just closed, and reported it through the loop's exception
    handler (uvloop/sslproto.pyx, SSLProtocol._do_read -> _fatal_error). The same report,
    made with the error a real closed uvloop transport raises, is now debug; any other
    report still goes to the default handler."""
    outcome: dict[str, str] = {}  # what a failure shows

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        transport = writer.transport
        transport.abort()
        # the close is a callback abort() scheduled: one scheduled after it runs later
        turned = loop.create_future()
        loop.call_soon(turned.set_result, None)
        await turned
        try:
            transport.write(b"late")
        except RuntimeError as exc:  # uvloop's own error for a closed handle
            closed_error = exc
        else:
            raise AssertionError(f"{transport!r} took a write after it was closed")
        outcome["loop"] = type(loop).__module__
        outcome["error"] = str(closed_error)
        loop.call_exception_handler({"message": "Fatal error on SSL protocol",
                                     "exception": closed_error, "transport": transport})
        loop.call_exception_handler({"message": "Fatal error on SSL protocol",
                                     "exception": RuntimeError("something else")})
        server.close()
        await server.wait_closed()

    with caplog.at_level(logging.DEBUG):
        run(main())
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [str(r.exc_info[1]) if r.exc_info else r.getMessage() for r in errors] == [
        "something else"], outcome
    quiet = [r for r in caplog.records if r.name == "setpoint.cli.eventloop"]
    assert len(quiet) == 1 and "the handler is closed" in quiet[0].getMessage()
