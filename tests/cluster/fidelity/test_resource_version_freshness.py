"""Reads at a resourceVersion the server has not reached yet.

Sources (kubernetes/apiserver v0.32, pkg/storage/...):
- cacher/watch_cache.go waitUntilFreshAndBlock (blockTimeout 3 s,
  resourceVersionTooHighRetrySeconds 1), WaitUntilFreshAndGet, WaitUntilFreshAndList
- cacher/cacher.go Get, GetList (shouldDelegateList), Watch
  (waitUntilWatchCacheFreshAndForceAllEvents: only a watch that sends initial events waits;
  newErrWatcher: the wait's error is the stream's ERROR event)
- cacher/cache_watcher.go process: only events newer than the watch's resourceVersion
- errors.go NewTooLargeResourceVersionError
- registry/generic/registry/store.go DeleteCollection (lists first; with NotOlderThan through
  the watch cache: a plain resourceVersion is etcd's exact read, test_delete_collection.py)
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from setpoint.testing.waiting import wait_for
from tests.cluster.conftest import API
from tests.cluster.test_list_watch import read_events

pytestmark = pytest.mark.asyncio

CMS = "/api/v1/namespaces/default/configmaps"
WATCH_LIST = "sendInitialEvents=true&allowWatchBookmarks=true&" \
             "resourceVersionMatch=NotOlderThan"


async def _rv(api: API) -> int:
    status, listed = await api.get("/api/v1/namespaces")
    assert status == 200
    return int(listed["metadata"]["resourceVersion"])


async def _cm(api: API, name: str) -> dict[str, Any]:
    status, obj = await api.post(CMS, {"metadata": {"name": name}, "data": {"a": "1"}})
    assert status == 201, obj
    assert isinstance(obj, dict)
    return obj


async def test_too_large_resource_version_times_out_after_the_wait(api: API) -> None:
    """A read the watch cache serves of a revision nobody writes within blockTimeout: a GET
    with a resourceVersion, a LIST (NotOlderThan or none, a limit included), a
    DELETECOLLECTION with NotOlderThan (it lists first) answer
    NewTooLargeResourceVersionError, a 504 with the ResourceVersionTooLarge cause and a retry
    of 1 s; a watch that sends initial events
    waits too and sends the same Status as its one ERROR event in a 200 stream. The reads
    run side by side: one wait for all."""
    await _cm(api, "x")
    current = await _rv(api)
    wanted = current + 1000
    too_large = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"Timeout: Too large resource version: {wanted}, current: {current}",
        "reason": "Timeout",
        "details": {"causes": [{"reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version"}],
                    "retryAfterSeconds": 1},
        "code": 504}
    reads = [api.get(f"{CMS}?resourceVersion={wanted}"),
             api.get(f"{CMS}?resourceVersion={wanted}&resourceVersionMatch=NotOlderThan&limit=1"),
             api.get(f"{CMS}/x?resourceVersion={wanted}"),
             api.delete(f"{CMS}?resourceVersion={wanted}&resourceVersionMatch=NotOlderThan")]

    async def retry_after() -> str | None:
        # responsewriters/status.go ErrorNegotiated: the retry as a Retry-After header too
        async with api.session.get(f"{api.cluster.url}{CMS}/x?resourceVersion={wanted}",
                                   ssl=api.ssl) as resp:
            return resp.headers.get("Retry-After")

    *answers, header, events = await asyncio.gather(*reads, retry_after(), read_events(
        api.cluster, api, f"{WATCH_LIST}&resourceVersion={wanted}", count=2, timeout=10))
    for answer in answers:
        assert answer == (504, too_large)
    assert header == "1"
    assert events == [{"type": "ERROR", "object": too_large}]
    status, _ = await api.get(f"{CMS}/x")
    assert status == 200, "the refused DELETECOLLECTION deleted nothing"


async def test_read_waits_for_a_write_to_reach_its_resource_version(api: API) -> None:
    """When a write reaches the revision within the wait, the read is served: a GET and a
    LIST at least that fresh, and a watch's initial events with the object written."""
    wanted = await _rv(api) + 1
    freshness = api.cluster.api.freshness
    get = asyncio.ensure_future(api.get(f"{CMS}/late?resourceVersion={wanted}"))
    listed = asyncio.ensure_future(api.get(f"{CMS}?resourceVersion={wanted}"))
    # the namespace's kube-root-ca.crt and the object written, then the end bookmark
    watched = asyncio.ensure_future(read_events(
        api.cluster, api, f"{WATCH_LIST}&resourceVersion={wanted}", 3, timeout=10))
    await wait_for(lambda: freshness.waiting == 3, message="three reads waiting")
    created = await _cm(api, "late")
    assert int(created["metadata"]["resourceVersion"]) == wanted
    status, got = await get
    assert status == 200 and got["metadata"]["resourceVersion"] == str(wanted)
    status, page = await listed
    assert status == 200 and int(page["metadata"]["resourceVersion"]) >= wanted
    assert "late" in [i["metadata"]["name"] for i in page["items"]]
    *added, bookmark = await watched
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in added] == [
        ("ADDED", "kube-root-ca.crt"), ("ADDED", "late")]
    assert bookmark["type"] == "BOOKMARK"
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= wanted
    assert freshness.waiting == 0


async def test_watch_from_a_future_resource_version_skips_events_up_to_it(api: API) -> None:
    """A watch without initial events does not wait: it starts at once (200) and sends only
    the events newer than its resourceVersion, even those written after it started."""
    start = await _rv(api)
    url = f"{api.cluster.url}{CMS}?watch=1&resourceVersion={start + 2}&timeoutSeconds=30"
    async with api.session.get(url, ssl=api.ssl) as resp:
        assert resp.status == 200
        for name in ("a", "b", "c"):
            await _cm(api, name)
        event = orjson.loads(await asyncio.wait_for(resp.content.readline(), 10))
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "c"
    assert event["object"]["metadata"]["resourceVersion"] == str(start + 3)
