"""The store at scale: 100,000 objects in at most 2 KB each, LISTs that cost what they return.

kube-apiserver's LIST of a namespace reads the etcd key range ``/<resource>/<namespace>/``
(k8s.io/apiserver/pkg/storage/etcd3/store.go GetList) and the watch cache keeps its objects
indexed by namespace (cacher/watch_cache.go), so a LIST costs what it returns however many
objects other namespaces hold. Costs here are counted in keys visited
(``Store.keys_scanned``) and memory in bytes Python allocated (tracemalloc), never in
seconds. Run with the benchmarks: ``pytest -m slow tests/cluster/test_store_scale.py``.
"""

from __future__ import annotations

import copy
import gc
import tracemalloc
from typing import Any

import pytest

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API

Obj = dict[str, Any]

OBJECTS = 100_000
PER_NAMESPACE = 10_000
MAX_BYTES_PER_OBJECT = 2048


async def _configmap_as_stored(api: API) -> Obj:
    """A small ConfigMap created over HTTP: uid, timestamps and managed fields as stored."""
    assert (await api.post("/api/v1/namespaces", {"metadata": {"name": "template"}}))[0] == 201
    status, created = await api.post("/api/v1/namespaces/template/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm-000000", "labels": {"app": "bench", "shard": "0"}},
        "data": {"key": "value", "index": "0"}})
    assert status == 201, created
    return created  # type: ignore[no-any-return]


def _clone(template: Obj, i: int) -> Obj:
    obj = copy.deepcopy(template)
    meta = obj["metadata"]
    meta.update(name=f"cm-{i:06d}", namespace=f"big-{i // PER_NAMESPACE}",
                uid=f"{i:08d}-0000-4000-8000-000000000000")
    meta["labels"]["shard"] = str(i % 10)
    obj["data"]["index"] = str(i)
    return obj


@pytest.mark.slow
async def test_100000_objects_take_at_most_2kb_each_and_lists_cost_what_they_return(
        cluster: RunningCluster, api: API) -> None:
    store = cluster.api.store
    template = await _configmap_as_stored(api)
    for b in range(OBJECTS // PER_NAMESPACE):
        assert (await api.post("/api/v1/namespaces", {"metadata": {"name": f"big-{b}"}}))[0] \
            == 201
    assert (await api.post("/api/v1/namespaces", {"metadata": {"name": "small"}}))[0] == 201
    status, _ = await api.post("/api/v1/namespaces/small/configmaps",
                               {"metadata": {"name": "only"}})
    assert status == 201

    # memory: everything the store keeps for them, the event history included
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(OBJECTS):
            store.put("/configmaps", _clone(template, i))
        gc.collect()
        per_object = (tracemalloc.get_traced_memory()[0] - before) / OBJECTS
    finally:
        tracemalloc.stop()
    assert per_object <= MAX_BYTES_PER_OBJECT, per_object

    # a namespace of one object (and the root CA publisher's ConfigMap) beside 100,000
    # objects: its own keys visited, also right after a write
    small = "/api/v1/namespaces/small/configmaps"
    for write_first in (False, True):
        if write_first:
            status, _ = await api.post("/api/v1/namespaces/big-0/configmaps",
                                       {"metadata": {"name": "written"}})
            assert status == 201
        scanned = store.keys_scanned
        status, listed = await api.get(small)
        assert status == 200
        assert [i["metadata"]["name"] for i in listed["items"]] == ["kube-root-ca.crt", "only"]
        assert store.keys_scanned - scanned == 2

    # pages of a namespace of 10,000: each page reads its own keys and one more
    path = "/api/v1/namespaces/big-3/configmaps"
    token, seen, costs = "", 0, []
    while True:
        scanned = store.keys_scanned
        status, page = await api.get(f"{path}?limit=500" + (
            f"&continue={token}" if token else ""))
        assert status == 200, page
        costs.append(store.keys_scanned - scanned)
        seen += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert seen == PER_NAMESPACE + 1  # and the root CA publisher's ConfigMap
    assert max(costs) <= 501, costs

    # a full LIST keeps nothing once answered
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        status, listed = await api.get("/api/v1/configmaps")
        assert status == 200
        assert len(listed["items"]) >= OBJECTS + 2
        del listed
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept <= 1024 * 1024, kept
