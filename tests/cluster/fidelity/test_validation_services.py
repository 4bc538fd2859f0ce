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

from tests.cluster.fidelity.builtin_server import Kube

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
