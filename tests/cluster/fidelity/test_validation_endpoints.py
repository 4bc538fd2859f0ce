"""Endpoints validation over HTTP, with kube-apiserver 1.32's (field, reason) causes.

Source: pkg/apis/core/validation/validation.go (ValidateEndpoints, validateEndpointSubsets,
validateEndpointAddress: IsValidIP then ValidateNonSpecialIP, validateEndpointPort). One
documented difference: loopback addresses are accepted (this server's process-runtime
workloads live on loopback networks).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

ENDPOINTS = "/api/v1/namespaces/default/endpoints"
INV, REQ, UNSUP = "FieldValueInvalid", "FieldValueRequired", "FieldValueNotSupported"
PORT = {"port": 80}

CASES: list[tuple[str, list[dict[str, Any]], dict[tuple[str, str], int]]] = [
    ("no-addresses", [{"ports": [PORT]}], {("subsets[0]", REQ): 1}),
    # a malformed IP fails both IsValidIP and ValidateNonSpecialIP
    ("bad-ip", [{"addresses": [{"ip": "ten"}]}], {("subsets[0].addresses[0].ip", INV): 2}),
    ("special-ips", [{"addresses": [{"ip": "0.0.0.0"}],
                      "notReadyAddresses": [{"ip": "169.254.0.9"}]}],
     {("subsets[0].addresses[0].ip", INV): 1, ("subsets[0].notReadyAddresses[0].ip", INV): 1}),
    ("bad-hostname-and-node", [{"addresses": [{"ip": "10.0.0.1", "hostname": "a.b",
                                                "nodeName": "Node_1"}]}],
     {("subsets[0].addresses[0].hostname", INV): 1, ("subsets[0].addresses[0].nodeName", INV): 1}),
    # several ports must be named; numbers in range; a known protocol
    ("ports", [{"addresses": [{"ip": "10.0.0.1"}],
                "ports": [{"port": 0}, {"port": 80, "protocol": "ICMP", "name": "Web"}]}],
     {("subsets[0].ports[0].name", REQ): 1, ("subsets[0].ports[0].port", INV): 1,
      ("subsets[0].ports[1].name", INV): 1, ("subsets[0].ports[1].protocol", UNSUP): 1}),
]


@pytest.mark.parametrize(("case", "subsets", "expected"), CASES, ids=[c[0] for c in CASES])
def test_endpoints_are_validated(kube: Kube, case: str, subsets: list[dict[str, Any]],
                                 expected: dict[tuple[str, str], int]) -> None:
    body = {"metadata": {"name": case}, "subsets": subsets}
    assert kube.reject("POST", ENDPOINTS, body) == Counter(expected)


def test_endpoints_messages_are_kubernetes_words(kube: Kube) -> None:
    assert kube.messages("POST", ENDPOINTS, {"metadata": {"name": "words"}, "subsets": [
        {"addresses": [{"ip": "ten"}]}, {}]}) == {
        "subsets[0].addresses[0].ip": [
            'Invalid value: "ten": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
            'Invalid value: "ten": must be a valid IP address'],
        "subsets[1]": ["Required value: must specify `addresses` or `notReadyAddresses`"]}


def test_endpoints_update_is_validated_and_loopback_is_kept(kube: Kube) -> None:
    status, body = kube.call("POST", ENDPOINTS, {"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "127.0.0.5"}], "ports": [PORT]}]})
    assert status == 201, body
    body["subsets"][0]["ports"].append({"port": 81})
    assert kube.reject("PUT", f"{ENDPOINTS}/web", body) == Counter(
        {("subsets[0].ports[0].name", REQ): 1, ("subsets[0].ports[1].name", REQ): 1})
