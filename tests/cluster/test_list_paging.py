"""Paginated lists: each page costs what it returns, in etcd's key order, at one revision.

The apiserver's continue token names the key after which the next page starts, relative to
the listed prefix (k8s.io/apiserver/pkg/storage/etcd3/store.go GetList, continue.go): etcd
finds it by its ordered index, so a page's work is proportional to the page. Keys are
``<namespace>/<name>`` compared as bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest
import yaml

from setpoint.cluster import RunningCluster
from setpoint.cluster.endpoints import collections as collection_reads
from setpoint.cluster.endpoints.listencoding import LIST_CHUNK_ITEMS
from setpoint.cluster.registry.listing import list_items_json
from tests.cluster.conftest import API

Obj = dict[str, Any]


async def _walk(api: API, path: str, limit: int) -> list[Obj]:
    pages: list[Obj] = []
    token = ""
    while True:
        status, body = await api.get(f"{path}?limit={limit}" + (
            f"&continue={token}" if token else ""))
        assert status == 200, body
        pages.append(body)
        token = body["metadata"].get("continue", "")
        if not token:
            return pages


def _names(pages: list[Obj]) -> list[str]:
    return [f"{i['metadata']['namespace']}/{i['metadata']['name']}"
            for p in pages for i in p["items"]]


async def _create(api: API, ns: str, name: str) -> None:
    status, body = await api.post(f"/api/v1/namespaces/{ns}/configmaps",
                                  {"metadata": {"name": name}})
    assert status == 201, body


async def test_each_page_reads_only_the_keys_it_returns(cluster: RunningCluster,
                                                        api: API) -> None:
    """Keys read per page stay at limit+1 however far into the list the page is."""
    for i in range(300):
        await _create(api, "default", f"cm-{i:04d}")
    store = cluster.api.store
    total = len((await api.get("/api/v1/namespaces/default/configmaps"))[1]["items"])
    token = ""
    costs: list[int] = []
    seen = 0
    while True:
        before = store.keys_scanned
        status, body = await api.get("/api/v1/namespaces/default/configmaps?limit=20" + (
            f"&continue={token}" if token else ""))
        assert status == 200, body
        costs.append(store.keys_scanned - before)
        seen += len(body["items"])
        token = body["metadata"].get("continue", "")
        if not token:
            break
        assert body["metadata"]["remainingItemCount"] == total - seen
    assert seen == total
    assert max(costs) <= 21, costs


async def test_pages_follow_etcd_key_order_across_namespaces(api: API) -> None:
    """"a-b/…" sorts before "a/…" as bytes ('-' < '/'): every object comes exactly once."""
    for ns in ("a", "a-b", "ab"):
        assert (await api.post("/api/v1/namespaces", {"metadata": {"name": ns}}))[0] == 201
        for i in range(5):
            await _create(api, ns, f"x{i}")
    whole = _names([(await api.get("/api/v1/configmaps"))[1]])
    assert whole == sorted(whole)
    assert _names(await _walk(api, "/api/v1/configmaps", 3)) == whole


async def test_a_continued_list_shows_the_revision_of_its_first_page(api: API) -> None:
    """Writes between pages do not show: the list is consistent at the first page's
    revision (or 410 once that revision is compacted)."""
    for i in range(10):
        await _create(api, "default", f"c{i}")
    path = "/api/v1/namespaces/default/configmaps"
    status, first = await api.get(f"{path}?limit=4")
    expected = _names([(await api.get(path))[1]])
    await api.delete(f"{path}/c5")
    await api.delete(f"{path}/c0")
    await _create(api, "default", "c55")
    await _create(api, "default", "a-first")
    status, body = await api.put(f"{path}/c7", {"metadata": {"name": "c7"}, "data": {"k": "v"}})
    assert status == 200, body
    pages = [first]
    token = first["metadata"]["continue"]
    while token:
        status, body = await api.get(f"{path}?limit=4&continue={token}")
        assert status == 200, body
        pages.append(body)
        token = body["metadata"].get("continue", "")
    assert _names(pages) == expected
    c7 = next(i for p in pages for i in p["items"] if i["metadata"]["name"] == "c7")
    assert "data" not in c7


@pytest.mark.slow
async def test_walking_100000_objects_in_pages_reads_each_key_about_once(
        cluster: RunningCluster, api: API) -> None:
    """100,000 ConfigMaps (stored directly, to keep the setup short) listed with limit=500."""
    store = cluster.api.store
    for i in range(100_000):
        store.put("/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"cm-{i:06d}", "namespace": "bulk", "uid": f"uid-{i}",
            "creationTimestamp": "2025-01-01T00:00:00Z"}})
    before = store.keys_scanned
    pages = await _walk(api, "/api/v1/namespaces/bulk/configmaps", 500)
    assert sum(len(p["items"]) for p in pages) == 100_000
    assert len(pages) == 200
    assert store.keys_scanned - before <= 100_000 + len(pages)


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
METADATA = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# what client-go sends for built-in types: answered in protobuf
PROTOBUF = "application/vnd.kubernetes.protobuf, application/json"


def _count_items(body: bytes) -> int:
    return len(orjson.loads(body)["items"])


def _count_protobuf_items(body: bytes) -> int:
    from setpoint.machinery.protobuf import decode

    listed = decode(body)
    assert listed["kind"] == "ConfigMapList"
    return len(listed["items"])


def _count_rows(body: bytes) -> int:
    table = orjson.loads(body)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:1] == ["Name"]
    return len(table["rows"])


def _count_yaml_items(body: bytes) -> int:
    listed = yaml.load(body, Loader=yaml.CSafeLoader)
    assert listed["kind"] == "ConfigMapList"
    return len(listed["items"])


def _count_metadata(body: bytes) -> int:
    listed = orjson.loads(body)
    assert listed["kind"] == "PartialObjectMetadataList"
    assert {i["kind"] for i in listed["items"]} == {"PartialObjectMetadata"}
    assert "data" not in listed["items"][0]
    return len(listed["items"])


async def readyz_during_list(cluster: RunningCluster, api: API,
                             monkeypatch: pytest.MonkeyPatch, path: str, accept: str,
                             count: Callable[[bytes], int]) -> int:
    """Send /readyz once the LIST of ``path`` has started presenting its items; assert it is
    answered first, and return what ``count`` makes of the list's body."""
    codec = cluster.api.rest.codec
    presenting = asyncio.Event()
    with_defaults = codec.with_defaults

    def observed(rt: Any, obj: Obj) -> Obj:  # every item presented goes through here
        presenting.set()
        return with_defaults(rt, obj)

    monkeypatch.setattr(codec, "with_defaults", observed)
    # a JSON list of a type served as stored splices in the stored JSON, not presented
    items_json = list_items_json  # what the collection reads imported

    def observed_json(rt: Any, raws: list[bytes]) -> bytes:
        presenting.set()
        return items_json(rt, raws)

    monkeypatch.setattr(collection_reads, "list_items_json", observed_json)
    answered: list[str] = []

    async def big_list() -> int:
        async with api.session.get(api.cluster.url + path, ssl=api.ssl,
                                   headers={"Accept": accept}) as resp:
            assert resp.status == 200
            body = await resp.read()
            answered.append("list")  # all of it is here (a streamed list's head came first)
            return count(body)

    listing = asyncio.create_task(big_list())
    started = asyncio.create_task(presenting.wait())
    await asyncio.wait([listing, started], return_when=asyncio.FIRST_COMPLETED)
    assert presenting.is_set(), await listing  # a list that failed says why
    status, body = await api.get("/readyz")
    answered.append("readyz")
    assert (status, body) == (200, "ok")
    listed = await listing
    assert answered == ["readyz", "list"]
    return listed


@pytest.mark.parametrize(("accept", "count", "objects"), [
    ("application/json", _count_items, 20_000), (TABLE, _count_rows, 20_000),
    (PROTOBUF, _count_protobuf_items, 20_000), (METADATA, _count_metadata, 20_000)],
    ids=["json", "table", "protobuf", "metadata"])
async def test_readyz_is_answered_while_a_large_list_is_served(
        cluster: RunningCluster, api: API, monkeypatch: pytest.MonkeyPatch, accept: str,
        count: Callable[[bytes], int], objects: int) -> None:
    """A /readyz sent once a large LIST has started presenting its items is answered before
    that LIST completes: the list leaves the loop free between chunks (kube-apiserver serves
    each request on its own goroutine, and health checks never wait for a list). The same
    in every representation: JSON, the Table ``kubectl get`` asks for, the protobuf a
    client-go client accepts, and metadata only (PartialObjectMetadataList); YAML's case is
    test_readyz_waits_for_few_of_a_yaml_lists_objects, which asserts this of a YAML list and
    how soon the /readyz comes (one 10,000-object YAML list, PyYAML's emitter being Python,
    costs seconds: it is served once)."""
    _bulk_configmaps(cluster, objects)
    assert await readyz_during_list(cluster, api, monkeypatch, "/api/v1/configmaps", accept,
                                    count) >= objects


def _bulk_configmaps(cluster: RunningCluster, objects: int) -> None:
    store = cluster.api.store
    for i in range(objects):
        store.put("/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"cm-{i:06d}", "namespace": "bulk", "uid": f"uid-{i}",
            "creationTimestamp": "2025-01-01T00:00:00Z"}, "data": {"k": "v" * 100}})


async def test_readyz_waits_for_few_of_a_yaml_lists_objects(
        cluster: RunningCluster, api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    """Other requests run between a list's chunks, one loop turn each, and a /readyz on a new
    TLS connection takes about ten turns; a YAML chunk (PyYAML's emitter is Python, some
    twenty times JSON's cost an object) is small enough that those turns come within a few
    hundred of its objects, not thousands: counted in objects presented, so a starved
    machine makes the wait slower but not longer in chunks (at 500 objects a YAML chunk, it
    took 4,500 objects, seconds, and under load the request timeout)."""
    objects = 10_000
    _bulk_configmaps(cluster, objects)
    codec = cluster.api.rest.codec
    presented = 0
    with_defaults = codec.with_defaults

    def counted(rt: Any, obj: Obj) -> Obj:
        nonlocal presented
        presented += 1
        return with_defaults(rt, obj)

    monkeypatch.setattr(codec, "with_defaults", counted)
    at_readyz: list[int] = []
    get = api.get

    async def readyz(path: str, **kw: Any) -> tuple[int, Any]:
        answer = await get(path, **kw)
        at_readyz.append(presented)
        return answer

    monkeypatch.setattr(api, "get", readyz)
    assert await readyz_during_list(cluster, api, monkeypatch, "/api/v1/configmaps",
                                    "application/yaml", _count_yaml_items) >= objects
    assert at_readyz and at_readyz[0] < objects // 4, at_readyz


async def test_a_list_longer_than_a_chunk_is_written_as_it_is_encoded(
        cluster: RunningCluster, api: API) -> None:
    """A JSON LIST of more items than one chunk is streamed: chunked transfer encoding, never
    a whole body held (what a LIST of 100,000 leaves resident otherwise: ~50 MB of body and
    as much of transport buffers, kept by the allocator). Go's net/http chunks any answer of
    more than 2 KiB written without a Content-Length (net/http/server.go
    bufferBeforeChunkingSize), as kube-apiserver's list answers are; a short list keeps its
    Content-Length. The items are the same, in the same order."""
    store = cluster.api.store
    count = LIST_CHUNK_ITEMS * 2 + 7
    for i in range(count):
        store.put("/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"cm-{i:06d}", "namespace": "bulk", "uid": f"uid-{i}",
            "creationTimestamp": "2025-01-01T00:00:00Z"}, "data": {"i": str(i)}})
    path = api.cluster.url + "/api/v1/namespaces/bulk/configmaps"
    async with api.session.get(path, ssl=api.ssl) as resp:
        assert resp.status == 200
        assert resp.headers.get("Transfer-Encoding") == "chunked"
        assert "Content-Length" not in resp.headers
        listed = orjson.loads(await resp.read())
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"
    assert [i["data"]["i"] for i in listed["items"]] == [str(i) for i in range(count)]
    assert "kind" not in listed["items"][0]
    async with api.session.get(path + "?limit=10", ssl=api.ssl) as resp:
        assert resp.headers.get("Content-Length") == str(len(await resp.read()))
