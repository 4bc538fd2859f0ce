"""NetworkPolicy, Ingress and IngressClass validation over HTTP, with kube-apiserver 1.32's
causes.

Sources: pkg/apis/networking/validation/validation.go (ValidateNetworkPolicySpec,
ValidateNetworkPolicyPort, ValidateNetworkPolicyPeer, ValidateIPBlock, ValidateIngressCreate,
ValidateIngressUpdate, ValidateIngressSpec, validateIngressBackend, validateHTTPIngressPath,
ValidateIngressClass, validateIngressClassSpecUpdate), pkg/apis/networking/v1/defaults.go
(SetDefaults_IngressClass) and pkg/registry/networking/networkpolicy/strategy.go (whose
ValidateUpdate runs ValidateNetworkPolicy and ValidateNetworkPolicyUpdate: a bad spec is
reported twice on an update).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

POLICIES = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
INGRESSES = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
CLASSES = "/apis/networking.k8s.io/v1/ingressclasses"
INV, REQ, UNSUP, FORB = ("FieldValueInvalid", "FieldValueRequired", "FieldValueNotSupported",
                         "FieldValueForbidden")
SERVICE = {"service": {"name": "web", "port": {"number": 80}}}

POLICY_CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("ports", {"ingress": [{"ports": [
        {"protocol": "ICMP"}, {"port": 0}, {"port": 90, "endPort": 80},
        {"port": "http", "endPort": 90}, {"endPort": 90}]}]},
     {("spec.ingress[0].ports[0].protocol", UNSUP): 1, ("spec.ingress[0].ports[1].port", INV): 1,
      ("spec.ingress[0].ports[2].endPort", INV): 1, ("spec.ingress[0].ports[3].endPort", INV): 1,
      ("spec.ingress[0].ports[4].endPort", INV): 1}),
    ("peers", {"egress": [{"to": [
        {}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
        {"ipBlock": {"cidr": "10.0.0.0/33"}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "11.0.0.0/16",
                                                     "10.0.0.0/8"]}},
        {"namespaceSelector": {"matchLabels": {"a": "b c"}}}]}]},
     {("spec.egress[0].to[0]", REQ): 1, ("spec.egress[0].to[1]", FORB): 1,
      ("spec.egress[0].to[2].ipBlock.cidr", INV): 1,
      ("spec.egress[0].to[3].ipBlock.except[1]", INV): 1,
      ("spec.egress[0].to[3].ipBlock.except[2]", INV): 1,
      ("spec.egress[0].to[4].namespaceSelector.matchLabels", INV): 1}),
    ("policy-types", {"policyTypes": ["Ingress", "Sideways"]},
     {("spec.policyTypes[1]", UNSUP): 1}),
]


@pytest.mark.parametrize(("case", "spec", "expected"), POLICY_CASES,
                         ids=[c[0] for c in POLICY_CASES])
def test_network_policies_are_validated(kube: Kube, case: str, spec: dict[str, Any],
                                        expected: dict[tuple[str, str], int]) -> None:
    body = {"metadata": {"name": f"np-{case}"}, "spec": {"podSelector": {}, **spec}}
    assert kube.reject("POST", POLICIES, body) == Counter(expected)


def test_network_policy_messages_and_update(kube: Kube) -> None:
    assert kube.messages("POST", POLICIES, {"metadata": {"name": "np-words"}, "spec": {
        "podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"],
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["12.0.0.0/16"]}}]}]
    }}) == {
        "spec.ingress[0].from[0].ipBlock.except[0]": [
            'Invalid value: "12.0.0.0/16": must be a strict subset of `cidr`'],
        "spec.policyTypes": ['Invalid value: []networking.PolicyType{"Ingress", "Egress", '
                             '"Ingress"}: may not specify more than two policyTypes']}
    status, body = kube.call("POST", POLICIES, {"metadata": {"name": "np-update"},
                                                "spec": {"podSelector": {}}})
    assert status == 201, body
    try:
        assert body["metadata"]["generation"] == 1
        # the strategy validates the new spec twice on an update
        assert kube.reject("PATCH", f"{POLICIES}/np-update",
                           {"spec": {"policyTypes": ["Up"]}}, MERGE) == Counter(
            {("spec.policyTypes[0]", UNSUP): 2})
    finally:
        kube.call("DELETE", f"{POLICIES}/np-update")


def _ingress(name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta}, "spec": spec}


INGRESS_CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("empty", {}, {("spec", INV): 1}),
    ("backends", {"defaultBackend": {}, "rules": [{"http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {
            "service": {"name": "Web", "port": {"name": "http", "number": 80}}}},
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web"}}},
        {"path": "/", "pathType": "Prefix", "backend": {
            **SERVICE, "resource": {"kind": "Bucket", "name": "b"}}}]}}]},
     {("spec.defaultBackend", INV): 1,
      ("spec.rules[0].http.paths[0].backend.service.name", INV): 1,
      ("spec.rules[0].http.paths[0].backend", INV): 1,
      ("spec.rules[0].http.paths[1].backend", REQ): 1,
      ("spec.rules[0].http.paths[2].backend", INV): 1}),
    ("paths", {"rules": [{"host": "10.0.0.1", "http": {"paths": [
        {"path": "a", "pathType": "Exact", "backend": SERVICE},
        {"path": "/a//b/..", "pathType": "Prefix", "backend": SERVICE},
        {"path": "/", "backend": SERVICE},
        {"path": "/", "pathType": "Regex", "backend": SERVICE}]}},
        {"host": "*.Example.com", "http": {"paths": []}}]},
     {("spec.rules[0].host", INV): 1, ("spec.rules[0].http.paths[0].path", INV): 1,
      ("spec.rules[0].http.paths[1].path", INV): 2,
      ("spec.rules[0].http.paths[2].pathType", REQ): 1,
      ("spec.rules[0].http.paths[3].pathType", UNSUP): 1,
      ("spec.rules[1].host", INV): 1, ("spec.rules[1].http.paths", REQ): 1}),
    ("tls-and-class", {"defaultBackend": SERVICE, "ingressClassName": "Nginx",
                       "tls": [{"hosts": ["a_b"], "secretName": "Cert"}]},
     {("spec.tls[0].hosts[0]", INV): 1, ("spec.tls[0].secretName", INV): 1,
      ("spec.ingressClassName", INV): 1}),
]


@pytest.mark.parametrize(("case", "spec", "expected"), INGRESS_CASES,
                         ids=[c[0] for c in INGRESS_CASES])
def test_ingresses_are_validated(kube: Kube, case: str, spec: dict[str, Any],
                                 expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", INGRESSES, _ingress(f"ing-{case}", spec)) == Counter(expected)


def test_ingress_messages_are_kubernetes_words(kube: Kube) -> None:
    body = _ingress("ing-words", {"ingressClassName": "b", "rules": [{"host": "1.2.3.4"}]},
                    annotations={"kubernetes.io/ingress.class": "a"})
    assert kube.messages("POST", INGRESSES, body) == {
        "spec.rules[0].host": ['Invalid value: "1.2.3.4": must be a DNS name, not an IP address'],
        "annotations.kubernetes.io/ingress.class": [
            'Invalid value: "a": must match `ingressClassName` when both are specified']}
    assert kube.messages("POST", INGRESSES, _ingress("ing-words", {})) == {
        "spec": ["Invalid value: []networking.IngressRule(nil): "
                 "either `defaultBackend` or `rules` must be specified"]}
    assert kube.messages("POST", INGRESSES, _ingress("ing-words", {"defaultBackend": {}})) == {
        "spec.defaultBackend": ['Invalid value: "": resource or service backend is required']}


def test_ingress_class_is_validated_defaulted_and_its_controller_fixed(kube: Kube) -> None:
    assert kube.reject("POST", CLASSES, {"metadata": {"name": "ic-bad"}, "spec": {
        "controller": "nginx", "parameters": {"kind": "", "name": "a/b", "scope": "Namespace"}}}
    ) == Counter({("spec.controller", INV): 1, ("spec.parameters.kind", REQ): 1,
                  ("spec.parameters.name", INV): 1, ("spec.parameters.namespace", REQ): 1})
    assert kube.messages("POST", CLASSES, {"metadata": {"name": "ic-bad"}, "spec": {}}) == {
        "spec.controller": ["Required value"]}
    status, body = kube.call("POST", CLASSES, {"metadata": {"name": "ic-fixed"}, "spec": {
        "controller": "example.com/ingress", "parameters": {"kind": "Config", "name": "c"}}})
    assert status == 201, body
    try:
        assert body["spec"]["parameters"]["scope"] == "Cluster"
        assert kube.messages("PATCH", f"{CLASSES}/ic-fixed",
                             {"spec": {"controller": "example.com/other"}}, MERGE) == {
            "spec.controller": ['Invalid value: "example.com/other": field is immutable']}
    finally:
        kube.call("DELETE", f"{CLASSES}/ic-fixed")
