"""NamespaceLifecycle details over real HTTP (k8s.io/apiserver
plugin/pkg/admission/namespace/lifecycle/admission.go): access reviews are admitted in any
namespace, and a refused create of an unnamed object is named as ``admission.NewForbidden``
names it (``extractResourceName``: name, generateName, else ``Unknown``)."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import API
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_local_access_review_is_admitted_in_a_missing_namespace(
        module_api: API) -> None:
    """``isAccessReview``: answering about the namespace would leak it."""
    status, body = await module_api.post(
        "/apis/authorization.k8s.io/v1/namespaces/nowhere/localsubjectaccessreviews",
        {"spec": {"user": "someone", "resourceAttributes": {
            "namespace": "nowhere", "verb": "get", "resource": "pods"}}})
    assert status == 201, body
    assert body["status"]["allowed"] is False


async def test_an_unnamed_create_in_a_terminating_namespace_is_named_unknown(
        module_api: API) -> None:
    status, _ = await module_api.post("/api/v1/namespaces", {"metadata": {"name": "ending"}})
    assert status == 201
    cms = "/api/v1/namespaces/ending/configmaps"
    status, _ = await module_api.post(cms, {"metadata": {"name": "held",
                                                         "finalizers": ["example.com/x"]}})
    assert status == 201
    await module_api.delete("/api/v1/namespaces/ending")

    async def terminating() -> bool:
        _, ns = await module_api.get("/api/v1/namespaces/ending")
        return bool(ns["status"].get("phase") == "Terminating")
    await wait_for(terminating)
    status, body = await module_api.post(cms, {"metadata": {}})
    assert (status, body["message"], body["details"]["name"]) == (
        403, 'configmaps "Unknown" is forbidden: unable to create new content in namespace '
        "ending because it is being terminated", "Unknown")
    await module_api.patch(f"{cms}/held", {"metadata": {"finalizers": None}},
                           "application/merge-patch+json")
