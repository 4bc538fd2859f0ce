"""DeleteOptions read by registries with a Delete of their own (namespaces, CRDs), and the
garbage collection finalizers the generic store derives from the options.

Each test is one rule of kube-apiserver 1.32, read from the source it cites; all share one
server (``module_api``) and write objects of their own names.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import CRD, GROUP

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _conflict(kind: str, group: str, name: str, detail: str) -> dict[str, Any]:
    qualified = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'Operation cannot be fulfilled on {qualified} "{name}": {detail}',
            "reason": "Conflict", "details": details, "code": 409}


async def test_a_namespace_checks_delete_preconditions_itself(module_api: API) -> None:
    """Rule: the namespace registry's Delete compares the preconditions with the namespace
    before the generic store does: the Conflict names the resource and quotes storage's
    "Precondition failed" wording, and nothing is marked for deletion.
    Source: pkg/registry/core/namespace/storage/storage.go (REST.Delete: "Ensure we have a
    UID precondition", NewConflict(api.Resource("namespaces"), ...))."""
    status, ns = await module_api.post("/api/v1/namespaces", {"metadata": {"name": "pre-ns"}})
    assert status == 201, ns
    uid, rv = ns["metadata"]["uid"], ns["metadata"]["resourceVersion"]
    assert await module_api.delete("/api/v1/namespaces/pre-ns", {
        "preconditions": {"uid": "other-uid"}}) == (409, _conflict(
            "namespaces", "", "pre-ns",
            f"Precondition failed: UID in precondition: other-uid, UID in object meta: {uid}"))
    assert await module_api.delete("/api/v1/namespaces/pre-ns", {
        "preconditions": {"resourceVersion": "1"}}) == (409, _conflict(
            "namespaces", "", "pre-ns", "Precondition failed: ResourceVersion in precondition: "
            f"1, ResourceVersion in object meta: {rv}"))
    status, out = await module_api.get("/api/v1/namespaces/pre-ns")
    assert (status, out["status"]["phase"]) == (200, "Active")


async def test_a_crd_checks_delete_preconditions_itself(module_api: API) -> None:
    """Rule: the CRD registry's Delete does as the namespace registry's, naming
    customresourcedefinitions.apiextensions.k8s.io.
    Source: k8s.io/apiextensions-apiserver pkg/registry/customresourcedefinition/etcd.go
    (REST.Delete)."""
    status, crd = await module_api.post(CRDS, CRD)
    assert status == 201, crd
    name = f"widgets.{GROUP}"
    assert await module_api.delete(f"{CRDS}/{name}", {
        "preconditions": {"uid": "other-uid"}}) == (409, _conflict(
            "customresourcedefinitions", "apiextensions.k8s.io", name,
            "Precondition failed: UID in precondition: other-uid, UID in object meta: "
            f"{crd['metadata']['uid']}"))


@pytest.mark.parametrize(("options", "finalizers"), [
    ({"propagationPolicy": "Orphan"}, ["example.com/hold", "orphan"]),
    ({"propagationPolicy": "Foreground"}, ["example.com/hold", "foregroundDeletion"]),
    ({"orphanDependents": True}, ["example.com/hold", "orphan"]),
    ({"orphanDependents": False}, ["example.com/hold"]),
    ({}, ["example.com/hold"]),
])
async def test_gc_finalizers_follow_the_options(module_api: API, options: dict[str, Any],
                                                finalizers: list[str]) -> None:
    """Rule: the deletion's orphan and foregroundDeletion finalizers come from the options
    (the deprecated orphanDependents first, which never asks for foreground deletion), after
    the object's own finalizers.
    Source: k8s.io/apiserver pkg/registry/generic/registry/store.go
    (deletionFinalizersForGarbageCollection, shouldOrphanDependents, shouldDeleteDependents)."""
    name = "gc-" + ("-".join(f"{k}-{v}" for k, v in options.items()).lower() or "none")
    status, out = await module_api.post(f"{NS}/configmaps", {"metadata": {
        "name": name, "finalizers": ["example.com/hold"]}})
    assert status == 201, out
    status, out = await module_api.delete(f"{NS}/configmaps/{name}", {**options, "dryRun": ["All"]})
    assert (status, out["metadata"]["finalizers"]) == (
        202 if options.get("orphanDependents") is False else 200, finalizers)
