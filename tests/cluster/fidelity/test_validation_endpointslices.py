"""EndpointSlice validation and strategy over HTTP, with kube-apiserver 1.32's causes.

Sources: pkg/apis/discovery/validation/validation.go (ValidateEndpointSlice,
validateAddressType, validateEndpoints, validatePorts, ValidateEndpointSliceUpdate) and
pkg/registry/discovery/endpointslice/strategy.go (generation 1 on create, bumped by any
change but metadata or by a label change; dropTopologyOnV1). As for Endpoints, loopback
addresses are accepted (this server's process-runtime workloads live on loopback networks).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
INV, REQ, UNSUP, DUP, MANY = ("FieldValueInvalid", "FieldValueRequired",
                              "FieldValueNotSupported", "FieldValueDuplicate",
                              "FieldValueTooMany")

CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("no-type", {"endpoints": []}, {("addressType", REQ): 1}),
    # the deprecated IP type is refused on create
    ("ip-type", {"addressType": "IP", "endpoints": []}, {("addressType", UNSUP): 1}),
    ("no-addresses", {"addressType": "IPv4", "endpoints": [{"addresses": []}]},
     {("endpoints[0].addresses", REQ): 1}),
    # an IPv6 address in an IPv4 slice; the unspecified address is special
    ("wrong-family", {"addressType": "IPv4", "endpoints": [
        {"addresses": ["fd00::1", "0.0.0.0"], "hostname": "A_b"}]},
     {("endpoints[0].addresses[0]", INV): 1, ("endpoints[0].addresses[1]", INV): 1,
      ("endpoints[0].hostname", INV): 1}),
    ("fqdn", {"addressType": "FQDN", "endpoints": [{"addresses": ["single", "a.b.c"]}]},
     {("endpoints[0].addresses[0]", INV): 1}),
    ("ports", {"addressType": "IPv4", "ports": [
        {"name": "Web", "port": 80}, {"name": "x", "protocol": "ICMP"},
        {"name": "x", "appProtocol": "a b"}]},
     {("ports[0].name", INV): 1, ("ports[1].protocol", UNSUP): 1, ("ports[2].name", DUP): 1,
      ("ports[2].appProtocol", INV): 1}),
    ("too-many-addresses", {"addressType": "IPv4", "endpoints": [
        {"addresses": [f"10.0.0.{i}" for i in range(1, 102)]}]},
     {("endpoints[0].addresses", MANY): 1}),
]


@pytest.mark.parametrize(("case", "fields", "expected"), CASES, ids=[c[0] for c in CASES])
def test_endpoint_slices_are_validated(kube: Kube, case: str, fields: dict[str, Any],
                                       expected: dict[tuple[str, str], int]) -> None:
    body = {"metadata": {"name": f"eps-{case}"}, **fields}
    assert kube.reject("POST", SLICES, body) == Counter(expected)


def test_endpoint_slice_messages_are_kubernetes_words(kube: Kube) -> None:
    assert kube.messages("POST", SLICES, {
        "metadata": {"name": "eps-words"}, "addressType": "IPv6",
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": []}]}) == {
        "endpoints[0].addresses[0]": ['Invalid value: "10.0.0.1": must be a valid IPv6 address'],
        "endpoints[1].addresses": ["Required value: must contain at least 1 address"]}
    assert kube.messages("POST", SLICES, {
        "metadata": {"name": "eps-words"}, "addressType": "Other"}) == {
        "addressType": ['Unsupported value: "Other": supported values: "FQDN", "IPv4", "IPv6"']}


def test_endpoint_slice_generation_type_and_topology(kube: Kube) -> None:
    status, body = kube.call("POST", SLICES, {
        "metadata": {"name": "eps-strategy"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.9"], "deprecatedTopology": {"zone": "a"}}],
        "ports": [{"port": 80}]})
    assert status == 201, body
    try:
        assert body["metadata"]["generation"] == 1
        # dropTopologyOnV1 clears deprecatedTopology silently; the port is defaulted
        assert body["endpoints"] == [{"addresses": ["127.0.0.9"], "conditions": {}}]
        assert body["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}]
        path = f"{SLICES}/eps-strategy"
        status, body = kube.call("PATCH", path, {"metadata": {"labels": {"a": "b"}}}, MERGE)
        assert (status, body["metadata"]["generation"]) == (200, 2), body
        status, body = kube.call("PATCH", path, {"metadata": {"annotations": {"a": "b"}}},
                                 MERGE)
        assert (status, body["metadata"]["generation"]) == (200, 2), body
        status, body = kube.call("PATCH", path, {"ports": [{"port": 81}]}, MERGE)
        assert (status, body["metadata"]["generation"]) == (200, 3), body
        assert kube.messages("PATCH", path, {"addressType": "IPv6"}, MERGE) == {
            "addressType": ['Invalid value: "IPv6": field is immutable'],
            "endpoints[0].addresses[0]": [
                'Invalid value: "127.0.0.9": must be a valid IPv6 address']}
    finally:
        kube.call("DELETE", f"{SLICES}/eps-strategy")
