"""The workqueue alone: dedup, one worker per item, dirty requeue, delays, backoff, drain."""

from __future__ import annotations

import asyncio

import pytest

from setpoint.runtime._ratelimit import (
    BucketRateLimiter,
    ItemExponentialRateLimiter,
    MaxOfRateLimiter,
)
from setpoint.runtime._workqueue import ShutDown, WorkQueue


async def test_adding_a_queued_item_again_does_not_queue_it_twice() -> None:
    q: WorkQueue[str] = WorkQueue()
    for _ in range(3):
        q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"


async def test_an_item_added_while_processed_is_handed_out_again_only_after_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    item = await q.get()
    q.add("a")                      # changed while a worker holds it
    assert len(q) == 0              # not handed to a second worker
    q.done(item)
    assert len(q) == 1
    assert await q.get() == "a"


async def test_an_item_not_added_while_processed_is_gone_after_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.done(await q.get())
    assert len(q) == 0


async def test_get_waits_for_an_add() -> None:
    q: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("x")
    assert await asyncio.wait_for(getter, 1) == "x"


async def test_add_after_delays_and_keeps_the_earliest_time() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("a", 10.0)
    q.add_after("a", 0.02)
    q.add_after("a", 5.0)           # later than what is scheduled: ignored
    assert q.waiting == 1 and len(q) == 0
    assert await asyncio.wait_for(q.get(), 1) == "a"
    assert q.waiting == 0


async def test_rate_limited_adds_back_off_exponentially_until_forgotten() -> None:
    limiter = ItemExponentialRateLimiter(base=0.001, max_delay=1.0)
    q: WorkQueue[str] = WorkQueue(rate_limiter=limiter)
    delays = [limiter.when("a") for _ in range(4)]
    assert delays == [0.001, 0.002, 0.004, 0.008]
    assert q.num_requeues("a") == 4
    q.forget("a")
    assert q.num_requeues("a") == 0
    assert limiter.when("a") == 0.001


def test_item_backoff_is_capped() -> None:
    limiter = ItemExponentialRateLimiter(base=0.005, max_delay=1000.0)
    for _ in range(200):
        delay = limiter.when("k")
    assert delay == 1000.0


def test_token_bucket_spreads_a_burst_over_time() -> None:
    now = [0.0]
    bucket = BucketRateLimiter(qps=10, burst=2, clock=lambda: now[0])
    assert bucket.when("a") == 0.0
    assert bucket.when("b") == 0.0
    assert bucket.when("c") == pytest.approx(0.1)
    assert bucket.when("d") == pytest.approx(0.2)
    now[0] = 10.0                     # refilled, up to the burst
    assert bucket.when("e") == 0.0


def test_max_of_takes_the_longest_delay() -> None:
    limiter = MaxOfRateLimiter(ItemExponentialRateLimiter(0.5, 10),
                               BucketRateLimiter(qps=100, burst=1))
    assert limiter.when("a") == 0.5


async def test_shutdown_wakes_waiting_workers() -> None:
    q: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    with pytest.raises(ShutDown):
        await getter
    q.add("ignored")
    assert len(q) == 0


async def test_shutdown_with_drain_waits_for_items_in_progress() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    item = await q.get()
    drained = asyncio.create_task(q.shutdown_with_drain(timeout=2))
    await asyncio.sleep(0.01)
    assert not drained.done()        # "a" is still being worked on
    with pytest.raises(ShutDown):    # "b" was waiting: dropped, not handed out
        await q.get()
    q.done(item)
    assert await drained is True


async def test_shutdown_with_drain_reports_a_timeout() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    await q.get()
    assert await q.shutdown_with_drain(timeout=0.01) is False


async def test_many_workers_never_hold_the_same_item() -> None:
    q: WorkQueue[int] = WorkQueue()
    holding: set[int] = set()
    processed = 0

    async def worker() -> None:
        nonlocal processed
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            assert item not in holding
            holding.add(item)
            await asyncio.sleep(0)
            if processed < 200:
                q.add(item)             # keeps coming back while held
            holding.discard(item)
            processed += 1
            q.done(item)

    for i in range(5):
        q.add(i)
    workers = [asyncio.create_task(worker()) for _ in range(4)]
    while processed < 200:
        await asyncio.sleep(0.001)
    await q.shutdown_with_drain(1)
    await asyncio.gather(*workers)
