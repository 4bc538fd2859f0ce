"""The store at scale: 100,000 objects in at most 2 KB each, LISTs that cost what they return.

kube-apiserver's LIST of a namespace reads the etcd key range ``/<resource>/<namespace>/``
(k8s.io/apiserver/pkg/storage/etcd3/store.go GetList) and the watch cache keeps its objects
indexed by namespace (cacher/watch_cache.go), so a LIST costs what it returns however many
objects other namespaces hold; a LIST by an equality label selector reads the objects that
carry the label (the store's label index, storage/labelindex.py). A full LIST is written as
it is encoded (chunked), so it neither holds its whole body nor leaves memory behind.
Costs here are counted in keys visited (``Store.keys_scanned``) and memory in bytes Python
allocated (tracemalloc), never in seconds. Run with the benchmarks:
``pytest -m slow tests/cluster/test_store_scale.py``.
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
# what a LIST of all 100,000 may allocate at once: its page of keys and a chunk's encoding
MAX_LIST_PEAK_BYTES = 16 * 1024 * 1024


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
@pytest.mark.timeout(900)  # 100,000 writes under tracemalloc on a loaded machine
async def test_100000_objects_take_at_most_2kb_each_and_lists_cost_what_they_return(
        cluster: RunningCluster, api: API) -> None:
    store = cluster.api.store
    template = await _configmap_as_stored(api)
    for b in range(OBJECTS // PER_NAMESPACE):
        assert (await api.post("/api/v1/namespaces", {"metadata": {"name": f"big-{b}"}}))[0] \
            == 201
    assert (await api.post("/api/v1/namespaces", {"metadata": {"name": "small"}}))[0] == 201
    status, _ = await api.post("/api/v1/namespaces/small/configmaps",
                               {"metadata": {"name": "only", "labels": {"app": "lonely"}}})
    assert status == 201

    # memory: everything the store keeps for them, the event history and label index included
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(OBJECTS):
            store.put("/configmaps", _clone(template, i))
        scan = store.scan("/configmaps", "", "", None, (("app", "lonely"),))
        assert scan is not None and len(list(scan)) == 1  # the label index, built
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

    # a label selector reads the objects that carry the label, whatever the range
    for path, names in (("/api/v1/configmaps?labelSelector=app%3Dlonely", ["only"]),
                        ("/api/v1/namespaces/small/configmaps?labelSelector=app%3Dlonely",
                         ["only"]),
                        ("/api/v1/configmaps?labelSelector=app%3Dnone", [])):
        scanned = store.keys_scanned
        status, listed = await api.get(path)
        assert status == 200
        assert [i["metadata"]["name"] for i in listed["items"]] == names
        assert store.keys_scanned - scanned == len(names)
    token, seen, costs = "", 0, []
    while True:  # 1,000 of big-3's objects carry shard=3 (10,000 across the namespaces)
        scanned = store.keys_scanned
        status, page = await api.get("/api/v1/namespaces/big-3/configmaps?labelSelector="
                                     "shard%3D3&limit=300" + (f"&continue={token}" if token
                                                              else ""))
        assert status == 200, page
        costs.append(store.keys_scanned - scanned)
        seen += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert seen == PER_NAMESPACE // 10
    assert max(costs) <= 301, costs

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

    # a full LIST read as it comes: the server never holds its whole body (about 50 MB),
    # and keeps nothing once it has answered
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        items, size, tail = 0, 0, b""
        async with api.session.get(api.cluster.url + "/api/v1/configmaps",
                                   ssl=api.ssl) as resp:
            assert resp.status == 200
            async for chunk in resp.content.iter_chunked(1 << 16):
                items += (tail + chunk).count(b'"uid":')
                size, tail = size + len(chunk), chunk[-5:]
        assert items >= OBJECTS + 2
        peak = tracemalloc.get_traced_memory()[1] - before
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert peak <= MAX_LIST_PEAK_BYTES, (peak, size)
    assert kept <= 1024 * 1024, kept
