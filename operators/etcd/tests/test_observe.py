"""How the operator reads a member's health: one slow answer is asked again, not counted
as a member down (observe.py ``_status``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from operators.etcd import observe

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def slow_member() -> AsyncIterator[tuple[str, list[float]]]:
    """An etcd status endpoint on loopback whose first answer comes after 1 s."""
    delays = [1.0]

    async def status(request: web.Request) -> web.Response:
        if delays:
            await asyncio.sleep(delays.pop())
        return web.json_response({"header": {"member_id": "7", "revision": "3"},
                                  "version": "3.4.23", "leader": "7", "raftIndex": "9"})
    app = web.Application()
    app.router.add_post("/v3/maintenance/status", status)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", delays
    finally:
        await runner.cleanup()


async def test_a_member_that_answers_late_once_is_asked_again(
        slow_member: tuple[str, list[float]], monkeypatch: pytest.MonkeyPatch) -> None:
    url, delays = slow_member
    monkeypatch.setattr(observe, "STATUS_TIMEOUTS", (0.2, 5.0))
    status = await observe._status(url)
    assert delays == [] and status is not None and (status.id, status.raft_index) == (7, 9)


async def test_a_member_that_hangs_up_is_not_asked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection closed without an answer is final: one attempt, no second wait."""
    connections = []

    def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        writer.close()
    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(observe, "STATUS_TIMEOUTS", (5.0, 5.0))
    async with server:
        assert await observe._status(f"http://127.0.0.1:{port}") is None
    assert len(connections) == 1
