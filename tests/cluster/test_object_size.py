"""Objects etcd would refuse as too large are refused before anything changes.

kube-apiserver takes request bodies up to 3 MiB, but etcd refuses a request larger than
--max-request-bytes (1.5 MiB by default, etcd server/embed/config.go), and the apiserver's
etcd client will not send one beyond 2 MiB (client/v3 options.go MaxCallSendMsgSize;
storagebackend/factory/etcd3.go sets none). etcd3/store.go (Create, GuaranteedUpdate) returns
etcd's error as it is, so the client gets a 500 with no reason and the error's text
(responsewriters/status.go convertStorageErrorOrNot; kubernetes/kubernetes#74600, #112152).
Every write path ends in the same store write, so create, update, every patch type and
apply that make an object too large are all answered so, with the object as it was.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.waiting import wait_for

Obj = dict[str, Any]

CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BLOBS = "/apis/example.com/v1/namespaces/default/blobs"
KiB = 1024
MiB = 1024 * KiB
ETCD_TOO_LARGE = "etcdserver: request is too large"
CLIENT_TOO_LARGE = "rpc error: code = ResourceExhausted desc = trying to send message larger " \
    "than max ("


@pytest.fixture
async def blobs(api: API) -> None:
    """A custom resource without size limits (custom resources are stored as JSON, as
    here): only etcd bounds it."""
    status, body = await api.post(CRD, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "blobs", "singular": "blob", "kind": "Blob",
                           "listKind": "BlobList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}})
    assert status == 201, body

    async def served() -> bool:
        return (await api.get(BLOBS))[0] == 200

    await wait_for(served)


def blob(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": name},
            "spec": spec}


def assert_too_large(status: int, answer: Obj, message: str) -> None:
    assert status == 500, answer
    assert answer["kind"] == "Status" and answer["status"] == "Failure"
    assert "reason" not in answer  # StatusReasonUnknown is omitted
    assert answer["message"].startswith(message), answer["message"]


async def unchanged(api: API, cluster: RunningCluster, name: str, before: Obj) -> None:
    revision = cluster.api.store.revision
    status, now = await api.get(f"{BLOBS}/{name}")
    assert status == 200
    assert now == before
    assert cluster.api.store.revision == revision


@pytest.mark.usefixtures("blobs")
async def test_a_create_etcd_refuses_is_500_and_stores_nothing(
        api: API, cluster: RunningCluster) -> None:
    revision = cluster.api.store.revision
    status, answer = await api.post(BLOBS, blob("big", data="x" * (1600 * KiB)))
    assert_too_large(status, answer, ETCD_TOO_LARGE)
    # a body just under 3 MiB: beyond what the etcd client sends
    status, answer = await api.post(BLOBS, blob("bigger", data="x" * (3 * MiB - 200)))
    assert_too_large(status, answer, CLIENT_TOO_LARGE)
    assert answer["message"].endswith(" vs. 2097152)")
    assert (await api.get(f"{BLOBS}/big"))[0] == 404
    assert (await api.get(f"{BLOBS}/bigger"))[0] == 404
    assert cluster.api.store.revision == revision
    # just under the limit is stored
    status, answer = await api.post(BLOBS, blob("fits", data="x" * (1400 * KiB)))
    assert status == 201, answer


@pytest.mark.usefixtures("blobs")
async def test_update_patch_and_apply_that_grow_an_object_too_large_leave_it_as_it_was(
        api: API, cluster: RunningCluster) -> None:
    status, before = await api.post(BLOBS, blob("grows", a="x" * (600 * KiB)))
    assert status == 201, before
    path = f"{BLOBS}/grows"

    status, answer = await api.put(path, {**before, "spec": {
        "a": "x" * (600 * KiB), "b": "y" * (1 * MiB)}})
    assert_too_large(status, answer, ETCD_TOO_LARGE)
    await unchanged(api, cluster, "grows", before)

    status, answer = await api.patch(path, {"spec": {"b": "y" * (1 * MiB)}},
                                     "application/merge-patch+json")
    assert_too_large(status, answer, ETCD_TOO_LARGE)
    await unchanged(api, cluster, "grows", before)

    # two copies of a 600 KiB value: within JSON patch's 3 MiB of copies, beyond etcd's
    copies = [{"op": "copy", "from": "/spec/a", "path": f"/spec/c{i}"} for i in range(2)]
    status, answer = await api.patch(path, None, raw=orjson.dumps(copies),
                                     content_type="application/json-patch+json")
    assert_too_large(status, answer, ETCD_TOO_LARGE)
    await unchanged(api, cluster, "grows", before)

    status, answer = await api.patch(f"{path}?fieldManager=grower", blob(
        "grows", b="y" * (1 * MiB)), "application/apply-patch+yaml")
    assert_too_large(status, answer, ETCD_TOO_LARGE)
    await unchanged(api, cluster, "grows", before)

    # growth etcd accepts is applied
    status, answer = await api.patch(path, {"spec": {"b": "y" * (100 * KiB)}},
                                     "application/merge-patch+json")
    assert status == 200, answer


@pytest.mark.usefixtures("blobs")
async def test_yaml_aliases_cannot_expand_a_small_body_beyond_what_can_be_stored(
        api: API, cluster: RunningCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """go-yaml's alias ratio counts nodes, not bytes: 900 aliases of a 4 KiB string pass it
    and expand a 10 KiB body to 3.5 MiB of text (of a 1 MiB string, to 900 MiB). The text
    the aliases expand to is counted before anything expands it; a document that could never
    be stored is answered as the store answers it, and nothing is stored."""
    store = cluster.api.store
    revision = store.revision
    reached_storage: list[str] = []
    put = store.put

    def spied(resource: str, obj: Obj) -> Obj:
        reached_storage.append(obj["metadata"]["name"])
        return put(resource, obj)

    monkeypatch.setattr(store, "put", spied)
    aliases = ", ".join(["*s"] * 900)
    body = ("apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: laughs}\n"
            f"spec:\n  s: &s {'x' * (4 * KiB)}\n  copies: [{aliases}]\n").encode()
    assert len(body) < 10 * KiB
    status, answer = await api.patch(f"{BLOBS}/laughs?fieldManager=m", None, raw=body,
                                     content_type="application/apply-patch+yaml")
    assert_too_large(status, answer, CLIENT_TOO_LARGE)
    status, answer = await api.post(BLOBS, None, raw=body, content_type="application/yaml")
    assert_too_large(status, answer, CLIENT_TOO_LARGE)
    assert store.revision == revision
    assert reached_storage == []  # refused as decoded, never expanded
    # aliases that expand to what etcd takes are decoded as go-yaml decodes them
    small = body.replace(b"x" * (4 * KiB), b"x" * 100).replace(b"laughs", b"fine")
    status, answer = await api.post(BLOBS, None, raw=small, content_type="application/yaml")
    assert status == 201, answer
    assert answer["spec"]["copies"] == ["x" * 100] * 900
