"""The watch history is bounded in bytes and age, not only in events.

kube-apiserver keeps only what etcd has not compacted (every 5 minutes by default,
--etcd-compaction-interval) and its watch cache drops old events; a watch from a revision no
longer held is answered 410 Expired (k8s.io/apiserver/pkg/storage/cacher/watch_cache.go,
etcd3/watcher.go), and the client relists.
"""

from __future__ import annotations

import orjson

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API

PATH = "/api/v1/namespaces/default/configmaps"


async def _first_watch_event(api: API, rv: str) -> dict[str, object]:
    async with api.session.get(f"{api.cluster.url}{PATH}?watch=1&resourceVersion={rv}",
                               ssl=api.ssl) as resp:
        assert resp.status == 200
        line = await resp.content.readline()
    return orjson.loads(line)  # type: ignore[no-any-return]


async def test_large_objects_written_often_do_not_accumulate(cluster: RunningCluster,
                                                             api: API) -> None:
    store = cluster.api.store
    store.max_history_bytes = 8 * 1024 * 1024
    big = "x" * (900 * 1024)  # a ConfigMap holds at most 1 MiB
    status, body = await api.post(PATH, {"metadata": {"name": "big"}, "data": {"k": big}})
    assert status == 201, body
    first_rv = body["metadata"]["resourceVersion"]
    for i in range(20):
        status, body = await api.put(f"{PATH}/big", {"metadata": {"name": "big"},
                                                     "data": {"k": big, "i": str(i)}})
        assert status == 200, body
    assert store.history_bytes <= 8 * 1024 * 1024
    event = await _first_watch_event(api, first_rv)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410  # type: ignore[index]
    assert event["object"]["reason"] == "Expired"  # type: ignore[index]
    # the newest events are still there to watch from
    status, body = await api.put(f"{PATH}/big", {"metadata": {"name": "big"},
                                                 "data": {"k": "small"}})
    previous = int(body["metadata"]["resourceVersion"]) - 1
    event = await _first_watch_event(api, str(previous))
    assert event["type"] == "MODIFIED"


async def test_events_older_than_the_history_age_expire(cluster: RunningCluster,
                                                        api: API) -> None:
    store = cluster.api.store
    status, body = await api.post(PATH, {"metadata": {"name": "old"}})
    old_rv = body["metadata"]["resourceVersion"]
    store.max_history_age_s = 0.0  # everything written before now is past the age
    status, body = await api.post(PATH, {"metadata": {"name": "new"}})
    assert status == 201, body
    event = await _first_watch_event(api, old_rv)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410  # type: ignore[index]
