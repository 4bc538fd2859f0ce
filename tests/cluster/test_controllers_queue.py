"""The in-process controllers' work queue: dedup, delayed keys, retries with backoff."""

from __future__ import annotations

import asyncio
import itertools
import logging

import pytest

from setpoint.cluster.controllers.queue import Retry, WorkQueue
from setpoint.machinery.errors import StatusError


async def test_a_key_added_many_times_in_one_turn_is_synced_once() -> None:
    seen: list[str] = []
    queue: WorkQueue[str] = WorkQueue("t", lambda k: seen.append(k))
    for key in ("a", "b", "a", "a"):
        queue.add(key)
    assert seen == []
    await asyncio.sleep(0)
    assert seen == ["a", "b"]


async def test_keys_added_while_syncing_wait_for_the_next_turn() -> None:
    seen: list[str] = []

    def sync(key: str) -> None:
        seen.append(key)
        if key == "a":
            queue.add("a2")

    queue: WorkQueue[str] = WorkQueue("t", sync)
    queue.add("a")
    await asyncio.sleep(0)
    assert seen == ["a"]
    await asyncio.sleep(0)
    assert seen == ["a", "a2"]


async def test_a_failing_sync_is_retried_until_it_succeeds() -> None:
    attempts: list[float] = []
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def sync(key: str) -> None:
        attempts.append(loop.time())
        if len(attempts) < 3:
            raise Retry("not yet")
        done.set()

    queue: WorkQueue[str] = WorkQueue("t", sync)
    queue.add("k")
    await asyncio.wait_for(done.wait(), 30)
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    # backoff doubles from 5 ms (timers never fire much early; they may fire late)
    assert len(attempts) == 3 and gaps[0] >= 0.004 and gaps[1] >= 0.009


async def test_a_sync_can_ask_to_see_its_key_again_later() -> None:
    seen: list[str] = []
    done = asyncio.Event()

    def sync(key: str) -> float | None:
        seen.append(key)
        if len(seen) == 2:
            done.set()
            return None
        return 0.01

    queue: WorkQueue[str] = WorkQueue("t", sync)
    queue.add("k")
    await asyncio.wait_for(done.wait(), 30)
    assert seen == ["k", "k"]


async def test_nothing_runs_after_shutdown() -> None:
    seen: list[str] = []
    queue: WorkQueue[str] = WorkQueue("t", lambda k: seen.append(k))
    queue.add("a")
    queue.add_after("b", 0.001)
    queue.shutdown()
    queue.add("c")
    await asyncio.sleep(0.01)
    assert seen == []


async def test_an_unexpected_error_has_one_traceback_per_key_and_distinct_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """A 409 or a Retry is one line; a bug's traceback once, not on every retry; the key is
    written plainly (the garbage collector's keys are tuples)."""
    errors = [RuntimeError("bug"), RuntimeError("bug"), KeyError("other"),
              StatusError(409, "Conflict", "the object has been modified")]
    done = asyncio.Event()

    def sync(key: tuple[str, str]) -> None:
        if errors:
            raise errors.pop(0)
        done.set()

    caplog.set_level(logging.DEBUG, logger="setpoint")
    queue: WorkQueue[tuple[str, str]] = WorkQueue("gc", sync)
    queue.add(("delete", "uid-1"))
    await asyncio.wait_for(done.wait(), 30)
    lines = [r for r in caplog.records if "controller=gc" in r.getMessage()]
    assert [r.exc_info is not None for r in lines] == [True, False, True, False]
    assert all("key=delete/uid-1 " in r.getMessage() for r in lines)
