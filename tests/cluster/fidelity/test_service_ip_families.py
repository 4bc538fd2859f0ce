"""Services on this single-stack IPv4 cluster: cluster IPs, IP families and their policy,
traffic policies, and what an update keeps, drops or refuses.

kube-apiserver 1.32:
- pkg/registry/core/service/storage/storage.go (beginCreate/beginUpdate:
  patchAllocatedValues, normalizeClusterIPs) and alloc.go (initIPFamilyFields: policy
  defaulted, ValidateServiceClusterIPsRelatedFields run before allocating, "this cluster is
  not configured for dual-stack services", "<family> is not configured on this cluster",
  headless and selectorless Services get both families): these run before validation, so
  their 422 comes alone.
- pkg/apis/core/validation/validation.go: ValidateServiceClusterIPsRelatedFields,
  validateServiceExternalTrafficPolicy (apiservice.ExternallyAccessible, NeedsHealthCheck),
  ValidateService's kubelet-port rule for LoadBalancers, ValidateServiceUpdate's
  validateUpgradeDowngradeClusterIPs ("may not change once set", the new clusterIPs as the
  value).
- pkg/registry/core/service/strategy.go dropTypeDependentFields: a type change drops what
  the new type cannot have when the user left it as it was.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

SERVICES = "/api/v1/namespaces/default/services"
MERGE = "application/merge-patch+json"


def _service(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"metadata": {"name": name}, "spec": spec}


def _causes(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in answer["details"]["causes"]]


@pytest.mark.parametrize(("name", "spec", "causes"), [
    ("require-dual", {"ipFamilyPolicy": "RequireDualStack"}, [
        ("FieldValueInvalid", "spec.ipFamilyPolicy", 'Invalid value: "RequireDualStack": '
         "this cluster is not configured for dual-stack services")]),
    ("single-two-families", {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4", "IPv6"]}, [
        ("FieldValueInvalid", "spec.ipFamilyPolicy", 'Invalid value: "SingleStack": must be '
         "'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified")]),
    ("ipv6-family", {"ipFamilies": ["IPv6"]}, [
        ("FieldValueInvalid", "spec.ipFamilies[0]",
         'Invalid value: "IPv6": not configured on this cluster')]),
    ("ipv6-cluster-ip", {"clusterIP": "fd00::5"}, [
        ("FieldValueInvalid", "spec.clusterIPs[0]",
         'Invalid value: []string{"fd00::5"}: IPv6 is not configured on this cluster')]),
    ("unknown-family", {"ipFamilies": ["IPv5"]}, [
        ("FieldValueNotSupported", "spec.ipFamilies[0]",
         'Unsupported value: "IPv5": supported values: "IPv4", "IPv6"')]),
    ("unknown-policy", {"ipFamilyPolicy": "Sometimes"}, [
        ("FieldValueNotSupported", "spec.ipFamilyPolicy", 'Unsupported value: "Sometimes": '
         'supported values: "PreferDualStack", "RequireDualStack", "SingleStack"')]),
    ("first-must-match", {"clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.51"]}, [
        ("FieldValueInvalid", "spec.clusterIPs",
         'Invalid value: []string{"10.96.0.51"}: first value must match `clusterIP`')]),
    ("ips-without-ip", {"clusterIPs": ["10.96.0.52"]}, [
        ("FieldValueInvalid", "spec.clusterIPs", 'Invalid value: []string{"10.96.0.52"}: '
         "must be empty when `clusterIP` is not specified")]),
    ("none-and-more", {"clusterIP": "None", "clusterIPs": ["None", "10.96.0.54"]}, [
        ("FieldValueInvalid", "spec.clusterIPs", 'Invalid value: []string{"None", '
         "\"10.96.0.54\"}: 'None' must be the first and only value")]),
    ("traffic-policy-on-cluster-ip", {"externalTrafficPolicy": "Local"}, [
        ("FieldValueInvalid", "spec.externalTrafficPolicy", 'Invalid value: "Local": may only '
         "be set for externally-accessible services")]),
    ("health-check-on-node-port", {"type": "NodePort", "healthCheckNodePort": 30500}, [
        ("FieldValueInvalid", "spec.healthCheckNodePort", "Invalid value: 30500: may only be "
         "set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'")]),
    ("kubelet-port", {"type": "LoadBalancer", "ports": [{"port": 10250}]}, [
        ("FieldValueInvalid", "spec.ports[0]", "Invalid value: 10250: may not expose port "
         "10250 externally since it is used by kubelet")]),
])
def test_a_service_this_cluster_cannot_serve_is_refused(
        kube: Kube, name: str, spec: dict[str, Any], causes: list[tuple[str, str, str]]
) -> None:
    status, answer = kube.call("POST", SERVICES, _service(name, **spec))
    assert status == 422, answer
    assert (answer["details"]["kind"], _causes(answer)) == ("Service", causes)


def test_policies_and_families_are_defaulted(kube: Kube) -> None:
    """SingleStack unless headless and selectorless (RequireDualStack, both families);
    PreferDualStack stays, with the one family the cluster has."""
    expected: dict[str, tuple[dict[str, Any], str, list[str]]] = {
        "plain": ({}, "SingleStack", ["IPv4"]),
        "prefer": ({"ipFamilyPolicy": "PreferDualStack"}, "PreferDualStack", ["IPv4"]),
        "headless": ({"clusterIP": "None"}, "RequireDualStack", ["IPv4", "IPv6"]),
        "headless-selector": ({"clusterIP": "None", "selector": {"a": "b"}}, "SingleStack",
                              ["IPv4"]),
        "headless-single": ({"clusterIP": "None", "ipFamilyPolicy": "SingleStack"},
                            "SingleStack", ["IPv4"]),
    }
    for name, (spec, policy, families) in expected.items():
        status, svc = kube.call("POST", SERVICES, _service(f"fam-{name}", **spec))
        assert status == 201, svc
        got = svc["spec"]
        assert (got["ipFamilyPolicy"], got["ipFamilies"]) == (policy, families), name
        assert got["clusterIPs"] == [got["clusterIP"]], name


def test_the_primary_cluster_ip_may_not_change(kube: Kube) -> None:
    """normalizeClusterIPs follows a changed clusterIP into clusterIPs; then
    validateUpgradeDowngradeClusterIPs refuses it, the new clusterIPs as the value."""
    status, svc = kube.call("POST", SERVICES, _service("fixed-ip"))
    assert status == 201, svc
    status, answer = kube.call("PUT", f"{SERVICES}/fixed-ip", {
        "metadata": {"name": "fixed-ip", "resourceVersion": svc["metadata"]["resourceVersion"]},
        "spec": {"clusterIP": "10.96.0.99", "ports": [{"port": 80}]}})
    assert status == 422, answer
    assert _causes(answer) == [("FieldValueInvalid", "spec.clusterIPs[0]",
                                'Invalid value: []string{"10.96.0.99"}: may not change once set')]
    status, answer = kube.call("PATCH", f"{SERVICES}/fixed-ip",
                               {"spec": {"ipFamilyPolicy": "RequireDualStack"}}, MERGE)
    assert (status, _causes(answer)[0][1]) == (422, "spec.ipFamilyPolicy")


def test_type_changes_allocate_and_release(kube: Kube) -> None:
    """ExternalName → ClusterIP allocates a cluster IP and defaults the families; a
    LoadBalancer with Local traffic back to ClusterIP drops its node ports, health check
    port, allocateLoadBalancerNodePorts and traffic policy (the user left them as they were);
    a NodePort update that leaves out the node port keeps it (patchAllocatedValues)."""
    status, svc = kube.call("POST", SERVICES, _service(
        "morph", type="ExternalName", externalName="db.example.com", ports=[]))
    assert status == 201, svc
    status, svc = kube.call("PATCH", f"{SERVICES}/morph", {"spec": {
        "type": "LoadBalancer", "externalName": None, "externalTrafficPolicy": "Local",
        "ports": [{"port": 80}]}}, MERGE)
    assert status == 200, svc
    spec = svc["spec"]
    assert spec["clusterIPs"] == [spec["clusterIP"]] and spec["ipFamilies"] == ["IPv4"]
    assert spec["healthCheckNodePort"] and spec["ports"][0]["nodePort"]
    status, svc = kube.call("PATCH", f"{SERVICES}/morph", {"spec": {"type": "ClusterIP"}},
                            MERGE)
    assert status == 200, svc
    assert {k: svc["spec"].get(k) for k in (
        "externalTrafficPolicy", "healthCheckNodePort", "allocateLoadBalancerNodePorts")} == {
        "externalTrafficPolicy": None, "healthCheckNodePort": None,
        "allocateLoadBalancerNodePorts": None}
    assert "nodePort" not in svc["spec"]["ports"][0]
    status, svc = kube.call("POST", SERVICES, _service("keeps-port", type="NodePort"))
    assert status == 201, svc
    node_port = svc["spec"]["ports"][0]["nodePort"]
    status, svc = kube.call("PUT", f"{SERVICES}/keeps-port", {
        "metadata": {"name": "keeps-port",
                     "resourceVersion": svc["metadata"]["resourceVersion"]},
        "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    assert status == 200, svc
    assert svc["spec"]["ports"][0]["nodePort"] == node_port
