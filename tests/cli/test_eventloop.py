"""A peer hanging up on a TLS connection is no traceback, whichever entry point runs the
loop: the command line's (``setpoint cluster up``, ``setpoint run``), the embedded server
started in a program's own loop (``serve()``), a Manager the SDK starts, and the testing
kit's shared cluster (``setpoint.machinery.eventloop``)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from setpoint.cli.eventloop import run
from setpoint.client import load_kubeconfig
from setpoint.cluster import serve
from setpoint.runtime import Manager
from setpoint.testing.clusters import ThreadedCluster

uvloop = pytest.importorskip("uvloop")  # the report is uvloop's TLS protocol's

QUIET_LOGGER = "setpoint.machinery.eventloop"


async def closed_write_report() -> dict[str, Any]:
    """What uvloop's SSLProtocol reports when it writes the TLS answer to a connection its
    peer has just closed (uvloop/sslproto.pyx, SSLProtocol._do_read -> _fatal_error), with
    the error a real closed uvloop transport raises ("unable to perform operation on
    <TCPTransport closed=True ...>; the handler is closed"). Made on a uvloop loop."""
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
    server.close()
    await server.wait_closed()
    return {"message": "Fatal error on SSL protocol", "exception": closed_error,
            "transport": transport}


def assert_quiet(caplog: pytest.LogCaptureFixture, reports: int,
                 others: tuple[str, ...] = ()) -> None:
    """No error logged (the default handler's "Fatal error on SSL protocol" and traceback)
    but ``others``; one debug line for each report."""
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [str(r.exc_info[1]) if r.exc_info else r.getMessage() for r in errors] == list(
        others)
    quiet = [r for r in caplog.records if r.name == QUIET_LOGGER]
    assert len(quiet) == reports
    assert all("the handler is closed" in r.getMessage() for r in quiet)


def test_a_write_to_a_socket_its_peer_closed_is_no_fatal_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """``setpoint cluster up`` printed "Fatal error on SSL protocol" and a uvloop traceback
    once in about two starts. The same report is now debug in the command line's loop; any
    other report still goes to the default handler."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_exception_handler(await closed_write_report())
        loop.call_exception_handler({"message": "Fatal error on SSL protocol",
                                     "exception": RuntimeError("something else")})

    with caplog.at_level(logging.DEBUG):
        run(main())
    assert_quiet(caplog, 1, others=("something else",))


def test_the_embedded_server_in_a_programs_own_loop_is_quiet_too(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with serve():
            asyncio.get_running_loop().call_exception_handler(await closed_write_report())

    with caplog.at_level(logging.DEBUG):
        uvloop.run(main())
    assert_quiet(caplog, 1)


def test_a_handler_the_program_set_is_left_in_place() -> None:
    def mine(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        pass

    async def main() -> object:
        asyncio.get_running_loop().set_exception_handler(mine)
        async with serve():
            return asyncio.get_running_loop().get_exception_handler()

    assert uvloop.run(main()) is mine


@pytest.fixture
def shared_cluster() -> Iterator[ThreadedCluster]:
    cluster = ThreadedCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_manager_the_sdk_starts_is_quiet_too(
        caplog: pytest.LogCaptureFixture, shared_cluster: ThreadedCluster) -> None:
    async def main() -> None:
        manager = Manager(config=load_kubeconfig(shared_cluster.kubeconfig))
        async with manager.running():
            asyncio.get_running_loop().call_exception_handler(await closed_write_report())

    with caplog.at_level(logging.DEBUG):
        uvloop.run(main())
    assert_quiet(caplog, 1)


def test_the_testing_kits_shared_cluster_is_quiet_too(
        caplog: pytest.LogCaptureFixture, shared_cluster: ThreadedCluster) -> None:
    report = uvloop.run(closed_write_report())
    loop = shared_cluster._loop
    assert loop is not None
    handled = threading.Event()
    with caplog.at_level(logging.DEBUG):
        loop.call_soon_threadsafe(loop.call_exception_handler, report)
        loop.call_soon_threadsafe(handled.set)  # runs after the report (callbacks in order)
        assert handled.wait(timeout=30)
    assert_quiet(caplog, 1)
