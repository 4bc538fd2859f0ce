"""Namespaces: termination, its conditions, the finalize subresource, lifecycle admission.

Sources (kubernetes/kubernetes, release 1.32):
- pkg/registry/core/namespace/storage/storage.go (REST.Delete, FinalizeREST)
- pkg/registry/core/namespace/strategy.go (namespaceFinalizeStrategy)
- pkg/controller/namespace/deletion/namespaced_resources_deleter.go, status_condition_utils.go
- staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go
- staging/src/k8s.io/apiserver/pkg/server/handler.go (go-restful's 405 as a Status)
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio

NS = "/api/v1/namespaces"


async def _terminating(api: API, name: str) -> dict[str, Any]:
    """A namespace held in Terminating by a configmap with a finalizer."""
    status, _ = await api.post(NS, {"metadata": {"name": name}})
    assert status == 201
    status, _ = await api.post(f"{NS}/{name}/configmaps",
                               {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    assert status == 201
    status, ns = await api.delete(f"{NS}/{name}")
    assert status == 200 and ns["status"]["phase"] == "Terminating"
    assert isinstance(ns, dict)
    return ns


async def _conditions(api: API, name: str) -> list[dict[str, Any]]:
    """The namespace's conditions once the controller has reported all five."""
    async def all_five() -> list[dict[str, Any]] | None:
        _, ns = await api.get(f"{NS}/{name}")
        conditions: list[dict[str, Any]] = ns["status"].get("conditions") or []
        return conditions if len(conditions) == 5 else None

    found: list[dict[str, Any]] = await wait_for(all_five)
    return found


async def test_terminating_namespace_conditions(api: API) -> None:
    """status_condition_utils.go: the five condition types in conditionTypes order; what
    remains (resource.group counts, finalizers) is True, the rest their "ok" variants."""
    await _terminating(api, "cond")
    conditions = await _conditions(api, "cond")
    assert [{k: c[k] for k in ("type", "status", "reason", "message")}
            for c in conditions] == [
        {"type": "NamespaceDeletionDiscoveryFailure", "status": "False",
         "reason": "ResourcesDiscovered", "message": "All resources successfully discovered"},
        {"type": "NamespaceDeletionGroupVersionParsingFailure", "status": "False",
         "reason": "ParsedGroupVersions",
         "message": "All legacy kube types successfully parsed"},
        {"type": "NamespaceDeletionContentFailure", "status": "False",
         "reason": "ContentDeleted",
         "message": "All content successfully deleted, may be waiting on finalization"},
        {"type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain",
         "message": "Some resources are remaining: configmaps. has 1 resource instances"},
        {"type": "NamespaceFinalizersRemaining", "status": "True",
         "reason": "SomeFinalizersRemain",
         "message": "Some content in the namespace has finalizers remaining: example.com/x "
                    "in 1 resource instances"},
    ]


async def test_finalize_serves_put_only(api: API) -> None:
    """FinalizeREST implements Update only: no GET or PATCH route, so go-restful answers 405
    and the apiserver writes NewGenericServerResponse's Status (empty details)."""
    status, _ = await api.post(NS, {"metadata": {"name": "fin-verbs"}})
    assert status == 201
    expected = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "the server does not allow this method on the requested resource",
                "reason": "MethodNotAllowed", "details": {}, "code": 405}
    assert await api.get(f"{NS}/fin-verbs/finalize") == (405, expected)
    assert await api.patch(f"{NS}/fin-verbs/finalize", {"spec": {"finalizers": []}},
                           "application/merge-patch+json") == (405, expected)


async def test_finalize_updates_spec_and_metadata_not_status(api: API) -> None:
    """namespaceFinalizeStrategy.PrepareForUpdate resets only the status: a PUT to finalize
    changes spec.finalizers and metadata (labels), keeps the status, and is refused on a
    stale resourceVersion like any update (strategy.go; generic store Update)."""
    status, ns = await api.post(NS, {"metadata": {"name": "fin"}})
    assert status == 201
    body = {**ns, "metadata": {**ns["metadata"], "labels": {**ns["metadata"]["labels"],
                                                            "team": "a"}},
            "spec": {"finalizers": ["example.com/keep"]}, "status": {"phase": "Terminating"}}
    status, out = await api.put(f"{NS}/fin/finalize", body)
    assert status == 200, out
    assert out["spec"] == {"finalizers": ["example.com/keep"]}
    assert out["status"] == {"phase": "Active"}
    assert out["metadata"]["labels"]["team"] == "a"
    status, stale = await api.put(f"{NS}/fin/finalize", body)
    assert status == 409
    assert stale["message"] == ('Operation cannot be fulfilled on namespaces "fin": the object '
                                "has been modified; please apply your changes to the latest "
                                "version and try again")


async def test_second_delete_of_terminating_namespace(api: API) -> None:
    """REST.Delete: a namespace that already has a deletionTimestamp and spec finalizers is
    answered as it is (200, no write), whatever the options (storage.go)."""
    await _terminating(api, "twice")
    await _conditions(api, "twice")
    status, before = await api.get(f"{NS}/twice")
    status, again = await api.delete(f"{NS}/twice", {"propagationPolicy": "Orphan"})
    assert status == 200
    assert again == before
    assert "finalizers" not in again["metadata"]


async def test_create_in_terminating_namespace_is_forbidden(api: API) -> None:
    """NamespaceLifecycle: no new content in a terminating namespace: Forbidden named by the
    object's name (or generateName), with the NamespaceTerminating cause (admission.go)."""
    await _terminating(api, "term")
    status, body = await api.post(f"{NS}/term/secrets", {"metadata": {"generateName": "s-"}})
    assert (status, body) == (403, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'secrets "s-" is forbidden: unable to create new content in namespace term '
                   "because it is being terminated",
        "reason": "Forbidden",
        "details": {"name": "s-", "kind": "secrets", "causes": [{
            "reason": "NamespaceTerminating", "message": "namespace term is being terminated",
            "field": "metadata.namespace"}]},
        "code": 403})


async def test_immortal_namespaces_cannot_be_deleted(api: API) -> None:
    """NamespaceLifecycle: default, kube-system and kube-public may not be deleted."""
    for name in ("default", "kube-system", "kube-public"):
        assert await api.delete(f"{NS}/{name}") == (403, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            "reason": "Forbidden", "details": {"name": name, "kind": "namespaces"},
            "code": 403})
