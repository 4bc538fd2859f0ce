"""wait_for: conditions awaited, never slept on; failures show the last state seen."""

from __future__ import annotations

import asyncio
import re

import pytest

from setpoint.client import Client, Kind
from setpoint.testing import WaitTimeout, wait_for
from setpoint.testing.plugin import Waiter

CONFIGMAP = Kind("v1", "ConfigMap")


async def test_a_predicate_is_awaited_until_true_and_its_value_returned() -> None:
    calls = []

    async def third_time() -> str | None:
        calls.append(1)
        return "done" if len(calls) >= 3 else None

    assert await wait_for(third_time, timeout=2) == "done"
    assert len(calls) == 3


async def test_a_predicate_that_stays_false_fails_with_its_last_value() -> None:
    status: dict[str, bool] = {}
    with pytest.raises(WaitTimeout, match=r"<lambda> \(test_waiting.py:\d+\) not met within "
                                          r"0.05s; last value: None"):
        await wait_for(lambda: status.get("ready"), timeout=0.05)


async def test_a_failing_assertion_counts_as_not_yet_and_is_reported() -> None:
    def check() -> bool:
        assert 1 + 1 == 3, "arithmetic is stubborn"
        return True

    with pytest.raises(WaitTimeout, match="last assertion: arithmetic is stubborn"):
        await wait_for(check, timeout=0.05)


async def test_an_object_condition_is_met_when_the_object_changes(
        k8s: Client, wait_for: Waiter) -> None:
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                      "data": {"phase": "one"}})

    async def later() -> None:
        await asyncio.sleep(0.05)
        await k8s.patch(CONFIGMAP, "c", {"data": {"phase": "two"}})

    task = asyncio.create_task(later())
    seen = await wait_for(CONFIGMAP, "c", lambda cm: cm["data"]["phase"] == "two", timeout=5)
    await task
    assert seen["data"] == {"phase": "two"}


async def test_an_object_wait_times_out_showing_the_object_as_last_seen(
        k8s: Client, wait_for: Waiter) -> None:
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                      "data": {"phase": "one"}})
    with pytest.raises(WaitTimeout) as caught:
        await wait_for(CONFIGMAP, "c", lambda cm: cm["data"]["phase"] == "two", timeout=0.2)
    message = str(caught.value)
    assert message.startswith("ConfigMap default/c: waited 0.2s to satisfy")
    assert re.search(r"last seen:\n.*'phase': 'one'", message, re.S)


async def test_waiting_for_a_missing_object_says_it_was_never_there(
        wait_for: Waiter) -> None:
    with pytest.raises(WaitTimeout, match=r"ConfigMap default/nope: waited 0.1s to exist; "
                                          "it does not exist"):
        await wait_for(CONFIGMAP, "nope", timeout=0.1)


async def test_waiting_for_deletion_ends_when_the_object_is_gone(
        k8s: Client, wait_for: Waiter) -> None:
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    deleting = asyncio.create_task(k8s.delete(CONFIGMAP, "c"))
    assert await wait_for(CONFIGMAP, "c", gone=True, timeout=5) is None
    await deleting
