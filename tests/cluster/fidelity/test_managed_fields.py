"""Managed fields of fields the server sets itself.

Sources: k8s.io/apiserver pkg/endpoints/handlers/create.go (the field manager tracks the
decoded, defaulted object before the REST storage's own create hooks run) and
kubernetes pkg/registry/core/service/storage (alloc.go: the IP families and cluster IPs are
the allocator's, set after tracking).
"""

from __future__ import annotations

from tests.cluster.conftest import API

SERVICES = "/api/v1/namespaces/default/services"


async def test_service_fields_the_allocator_sets_are_owned_by_nobody(api: API) -> None:
    """Rule: SetDefaults_Service's fields (type, sessionAffinity, internalTrafficPolicy,
    port protocol and targetPort) belong to the creator, but clusterIP, clusterIPs,
    ipFamilies and ipFamilyPolicy are set by the service REST allocator after the field
    manager ran: nobody owns them, though the object has them.
    Source: pkg/apis/core/v1/defaults.go (SetDefaults_Service),
    pkg/registry/core/service/storage/alloc.go (initIPFamilyFields, allocateCreate),
    staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go (UpdateNoErrors before
    r.Create)."""
    status, body = await api.post(f"{SERVICES}?fieldManager=creator", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})
    assert status == 201, body
    spec = body["spec"]
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"], spec["clusterIPs"]) == (
        "SingleStack", ["IPv4"], [spec["clusterIP"]])
    [entry] = body["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:spec": {
        "f:internalTrafficPolicy": {},
        "f:ports": {".": {}, 'k:{"port":80,"protocol":"TCP"}': {
            ".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
        "f:selector": {}, "f:sessionAffinity": {}, "f:type": {}}}
    # an update that leaves them out keeps them, still unowned
    sent = {**body, "spec": {k: v for k, v in spec.items()
                             if k not in ("ipFamilies", "ipFamilyPolicy")}}
    status, updated = await api.put(f"{SERVICES}/s?fieldManager=other", sent)
    assert status == 200, updated
    assert (updated["spec"]["ipFamilies"], updated["spec"]["ipFamilyPolicy"]) == (
        ["IPv4"], "SingleStack")
    assert [e["manager"] for e in updated["metadata"]["managedFields"]] == ["creator"]
