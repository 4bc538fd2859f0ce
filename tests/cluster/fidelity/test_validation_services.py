"""Service validation over HTTP, case by case, with kube-apiserver 1.32's (field, reason)
causes.

Sources, pkg/apis/core/validation/validation.go: ValidateService, validateServicePort,
ValidatePortNumOrName, validateClientIPAffinityConfig, validateServiceInternalTrafficFieldsValue,
ValidateServiceUpdate; pkg/apis/core/v1/defaults.go (SetDefaults_Service: sessionAffinity,
type, protocol, targetPort, traffic policies); pkg/registry/core/service/strategy.go.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

SERVICES = "/api/v1/namespaces/default/services"
REQ, INV, UNSUP, FORB, DUP = ("FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported",
                  "FieldValueForbidden", "FieldValueDuplicate")
PORT = {"port": 80}

# (case, spec, expected causes)
CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("no-ports", {"ports": []}, {("spec.ports", REQ): 1}),
    # validateServicePort: names required when several, DNS labels, unique
    ("port-names", {"ports": [{"port": 80}, {"name": "Web", "port": 81},
                              {"name": "a", "port": 82}, {"name": "a", "port": 83}]},
     {("spec.ports[0].name", REQ): 1, ("spec.ports[1].name", INV): 1,
      ("spec.ports[3].name", DUP): 1}),
    ("port-numbers", {"ports": [{"port": 70000, "protocol": "HTTP", "targetPort": "Not_A_Name",
                                 "appProtocol": "a b"}]},
     {("spec.ports[0].port", INV): 1, ("spec.ports[0].protocol", UNSUP): 1,
      ("spec.ports[0].targetPort", INV): 1, ("spec.ports[0].appProtocol", INV): 1}),
    # duplicate (protocol, port) pairs; node ports only for NodePort and LoadBalancer
    ("duplicates", {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 80}]},
     {("spec.ports[1]", DUP): 1}),
    ("node-port-on-cluster-ip", {"ports": [{"port": 80, "nodePort": 30080}]},
     {("spec.ports[0].nodePort", FORB): 1}),
    ("node-port-twice", {"type": "NodePort", "ports": [
        {"name": "a", "port": 80, "nodePort": 30081},
        {"name": "b", "port": 81, "nodePort": 30081}]},
     {("spec.ports[1].nodePort", DUP): 1}),
    # type-dependent rules
    ("headless-node-port", {"type": "NodePort", "clusterIP": "None"},
     {("spec.clusterIPs[0]", INV): 1}),
    ("external-name", {"type": "ExternalName", "externalName": "Not_A_Host"},
     {("spec.externalName", INV): 1}),
    ("external-name-missing", {"type": "ExternalName"}, {("spec.externalName", REQ): 1}),
    ("unknown-type", {"type": "Magic"}, {("spec.type", UNSUP): 1}),
    # ValidateLabels of the selector; session affinity
    ("selector", {"selector": {"a b": "c"}}, {("spec.selector", INV): 1}),
    ("affinity", {"sessionAffinity": "Sticky"}, {("spec.sessionAffinity", UNSUP): 1}),
    ("affinity-timeout", {"sessionAffinity": "ClientIP",
                          "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 90000}}},
     {("spec.sessionAffinityConfig.clientIP.timeoutSeconds", INV): 1}),
    ("load-balancer-only", {"loadBalancerSourceRanges": ["10.0.0.0/8"],
                            "allocateLoadBalancerNodePorts": True},
     {("spec.LoadBalancerSourceRanges", FORB): 1, ("spec.allocateLoadBalancerNodePorts", FORB): 1}),
    ("traffic-policy", {"internalTrafficPolicy": "Nearby"},
     {("spec.internalTrafficPolicy", UNSUP): 1}),
]


def _service(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"ports": [dict(PORT)],
                                                 **copy.deepcopy(spec)}}


@pytest.mark.parametrize(("case", "spec", "expected"), CASES, ids=[c[0] for c in CASES])
def test_service_create_is_validated(kube: Kube, case: str, spec: dict[str, Any],
                                     expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", SERVICES, _service(case, spec)) == Counter(expected)


def test_service_messages_are_kubernetes_words(kube: Kube) -> None:
    got = kube.messages("POST", SERVICES, _service("words", {
        "ports": [{"port": 80, "nodePort": 30090}], "sessionAffinity": "Sticky"}))
    assert got == {
        "spec.ports[0].nodePort": ["Forbidden: may not be used when `type` is 'ClusterIP'"],
        "spec.sessionAffinity": ['Unsupported value: "Sticky": supported values: "ClientIP", '
                                 '"None"']}


def test_valid_services_are_accepted(kube: Kube) -> None:
    for name, spec in (
            ("named-target", {"ports": [{"name": "http", "port": 80, "targetPort": "http",
                                         "appProtocol": "kubernetes.io/h2c"}]}),
            ("headless", {"clusterIP": "None", "ports": []}),
            ("alias", {"type": "ExternalName", "externalName": "db.example.com.", "ports": []}),
            ("sticky", {"sessionAffinity": "ClientIP"}),
            ("balanced", {"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]})):
        status, body = kube.call("POST", SERVICES, _service(name, spec))
        assert status == 201, (name, body)


# -- how a Service is reached from outside ---------------------------------------------------
# validation.go: ValidateService's externalIPs (IsValidIP, ValidateNonSpecialIP),
# loadBalancerSourceRanges (IsValidCIDR), validateLoadBalancerClassField,
# validateServiceTrafficDistribution; ValidateServiceUpdate's validateLoadBalancerClassField
# and validateServiceExternalTrafficFieldsUpdate.
LB = {"type": "LoadBalancer"}
ACCESS_CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("external-ips", {"externalIPs": [
        "not-an-ip", "0.0.0.0", "127.0.0.1", "169.254.1.1", "224.0.0.5", "::1", "fe80::1",
        "ff02::1", "10.0.0.1", "::ffff:127.0.0.1"]},
     {(f"spec.externalIPs[{i}]", INV): 1 for i in (0, 1, 2, 3, 4, 5, 6, 7, 9)}),
    ("source-ranges", {**LB, "loadBalancerSourceRanges": [
        "10.0.0.0/8", " 192.168.0.0/16 ", "10.0.0.1", "10.0.0.0/33", "fe80::/64", "bogus"]},
     {(f"spec.LoadBalancerSourceRanges[{i}]", INV): 1 for i in (2, 3, 5)}),
    ("source-ranges-not-lb", {"loadBalancerSourceRanges": ["bogus"]},
     {("spec.LoadBalancerSourceRanges", FORB): 1, ("spec.LoadBalancerSourceRanges[0]", INV): 1}),
    ("class-not-lb", {"loadBalancerClass": "example.com/lb"},
     {("spec.loadBalancerClass", FORB): 1}),
    ("class-format", {**LB, "loadBalancerClass": "-bad"}, {("spec.loadBalancerClass", INV): 1}),
    ("traffic-distribution", {"trafficDistribution": "Anywhere"},
     {("spec.trafficDistribution", UNSUP): 1}),
    ("affinity-timeout-zero", {"sessionAffinity": "ClientIP",
                               "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}},
     {("spec.sessionAffinityConfig.clientIP.timeoutSeconds", INV): 1}),
    ("health-check-not-local", {**LB, "healthCheckNodePort": 30555},
     {("spec.healthCheckNodePort", INV): 1}),
    ("external-policy-cluster-ip", {"externalTrafficPolicy": "Local"},
     {("spec.externalTrafficPolicy", INV): 1}),
]


@pytest.mark.parametrize(("case", "spec", "expected"), ACCESS_CASES,
                         ids=[c[0] for c in ACCESS_CASES])
def test_service_external_access_is_validated(kube: Kube, case: str, spec: dict[str, Any],
                                              expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", SERVICES, _service(case, spec)) == Counter(expected)


def test_service_external_access_messages_are_kubernetes_words(kube: Kube) -> None:
    service = _service("access-words", {"externalIPs": ["0.0.0.0", "fe80::1"],
                                        "loadBalancerClass": "example.com/lb"})
    service["metadata"]["annotations"] = {
        "service.beta.kubernetes.io/load-balancer-source-ranges": " 10.0.0.0/8 , nope"}
    ann = "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]"
    assert kube.messages("POST", SERVICES, service) == {
        "spec.externalIPs[0]": ['Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)'],
        "spec.externalIPs[1]": ['Invalid value: "fe80::1": may not be in the link-local range '
                                "(169.254.0.0/16, fe80::/10)"],
        ann: ["Forbidden: may only be used when `type` is 'LoadBalancer'",
              'Invalid value: "nope": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
              "2001:db8::/64)"],
        "spec.loadBalancerClass": ["Forbidden: may only be used when `type` is "
                                   "'LoadBalancer'"]}


def test_load_balancer_class_and_health_check_port_are_fixed(kube: Kube) -> None:
    """On a LoadBalancer the class may not change, nor be set later; the health check node
    port may not change while the policy stays Local. (Both are allowed once the type
    changes: the old value is dropped with it.)"""
    for name, spec in (("classy", {**LB, "loadBalancerClass": "example.com/a"}),
                       ("classless", LB),
                       ("local", {**LB, "externalTrafficPolicy": "Local"})):
        status, body = kube.call("POST", SERVICES, _service(name, spec))
        assert status == 201, body
    path = f"{SERVICES}/classy"
    assert kube.messages("PATCH", path, {"spec": {"loadBalancerClass": "example.com/b"}},
                         MERGE) == {"spec.loadBalancerClass": [
                             'Invalid value: "example.com/b": may not change once set']}
    assert kube.reject("PATCH", f"{SERVICES}/classless",
                       {"spec": {"loadBalancerClass": "example.com/b"}}, MERGE) == Counter(
        {("spec.loadBalancerClass", INV): 1})
    status, local = kube.call("GET", f"{SERVICES}/local")
    port = local["spec"]["healthCheckNodePort"]
    assert kube.messages("PATCH", f"{SERVICES}/local",
                         {"spec": {"healthCheckNodePort": port + 1}}, MERGE) == {
        "spec.healthCheckNodePort": ["Forbidden: field is immutable"]}
    status, body = kube.call("PATCH", f"{SERVICES}/classy",
                             {"spec": {"type": "ClusterIP", "loadBalancerClass": None}}, MERGE)
    assert status == 200, body


def test_external_traffic_policy_follows_external_access(kube: Kube) -> None:
    """pkg/registry/core/service/strategy.go dropTypeDependentFields: the policy is dropped
    when the Service stops being ExternallyAccessible (pkg/api/service/util.go: NodePort,
    LoadBalancer, or ClusterIP with external IPs) and kept while it stays so."""
    status, svc = kube.call("POST", SERVICES, _service("etp-ips", {
        "ports": [PORT], "externalIPs": ["192.0.2.10"]}))
    assert (status, svc["spec"]["externalTrafficPolicy"]) == (201, "Cluster"), svc
    status, svc = kube.call("PATCH", f"{SERVICES}/etp-ips", {"spec": {"externalIPs": None}},
                            MERGE)
    assert status == 200 and "externalTrafficPolicy" not in svc["spec"], svc
    status, svc = kube.call("POST", SERVICES, _service("etp-np", {"ports": [PORT],
                                                                  "type": "NodePort"}))
    assert status == 201, svc
    status, svc = kube.call("PATCH", f"{SERVICES}/etp-np", {"spec": {
        "type": "ClusterIP", "externalIPs": ["192.0.2.11"]}}, MERGE)
    assert (status, svc["spec"].get("externalTrafficPolicy")) == (200, "Cluster"), svc


def test_leaving_load_balancer_clears_its_status(kube: Kube) -> None:
    """pkg/registry/core/service/strategy.go dropTypeDependentFields: an update to another
    type resets status.loadBalancer (a status write of a LoadBalancer keeps it)."""
    status, svc = kube.call("POST", SERVICES, _service("lb-status", {
        "ports": [PORT], "type": "LoadBalancer"}))
    assert status == 201, svc
    ingress = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1", "ipMode": "VIP"}]}}
    status, svc = kube.call("PATCH", f"{SERVICES}/lb-status/status", {"status": ingress}, MERGE)
    assert (status, svc["status"]) == (200, ingress), svc
    status, svc = kube.call("PATCH", f"{SERVICES}/lb-status", {"spec": {"sessionAffinity":
                                                                        "ClientIP"}}, MERGE)
    assert (status, svc["status"]) == (200, ingress), svc
    status, svc = kube.call("PATCH", f"{SERVICES}/lb-status", {"spec": {"type": "ClusterIP"}},
                            MERGE)
    assert (status, svc["status"]) == (200, {"loadBalancer": {}}), svc
