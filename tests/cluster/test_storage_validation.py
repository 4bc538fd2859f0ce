"""storage.k8s.io objects are validated as kube-apiserver 1.32 validates them
(pkg/apis/storage/validation/validation.go, called by pkg/registry/storage/<kind>/strategy.go):
a request with an invalid object is a 422 naming every cause in Kubernetes' order, and
nothing is stored."""

from __future__ import annotations

import re
from typing import Any

from tests.cluster.conftest import API

CSINODES = "/apis/storage.k8s.io/v1/csinodes"
APPLY = "application/apply-patch+yaml"


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]]) -> dict[str, Any]:
    """The 422 Status of ``NewInvalid``: the summary joins each cause's ``field: message``."""
    summary = ", ".join(f"{f}: {m}" for _, m, f in causes)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{kind}.storage.k8s.io "{name}" is invalid: '
                       + (f"[{summary}]" if len(causes) > 1 else summary),
            "reason": "Invalid",
            "details": {"name": name, "group": "storage.k8s.io", "kind": kind,
                        "causes": [{"reason": r, "message": m, "field": f}
                                   for r, m, f in causes]},
            "code": 422}


def csinode(name: str, drivers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": drivers}}


async def test_csinode_drivers_are_validated_on_create(api: API) -> None:
    """ValidateCSINode → validateCSINodeDriver: the driver name as core's
    ValidateCSIDriverName (required, at most 63 bytes, a lower-cased DNS subdomain), the node
    ID (required, at most 256 bytes: the strategy sets AllowLongNodeID), a non-negative
    allocatable count, a duplicate name, and each topology key (required, unique, a
    qualified name) reported on the driver itself."""
    status, body = await api.post(CSINODES, csinode("node-a", [
        {"nodeID": "n"},
        {"name": "X" * 64, "nodeID": "n" * 257, "allocatable": {"count": -1}},
        {"name": "ok.example.com", "nodeID": "n",
         "topologyKeys": ["zone", "", "zone", "a b"]},
        {"name": "ok.example.com", "nodeID": "n"},
    ]))
    subdomain = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric "
                 "character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    qualified = ("name part must consist of alphanumeric characters, '-', '_' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                 "'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    assert (status, body) == (422, invalid("CSINode", "node-a", [
        ("FieldValueRequired", "Required value", "spec.drivers[0].name"),
        ("FieldValueInvalid", f'Invalid value: "": {subdomain}', "spec.drivers[0].name"),
        ("FieldValueTooLong", "Too long: may not be more than 63 bytes",
         "spec.drivers[1].name"),
        ("FieldValueInvalid", f'Invalid value: "{"n" * 257}": must be 256 characters or less',
         "spec.drivers[1].nodeID"),
        ("FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0",
         "spec.drivers[1].allocatable.count"),
        ("FieldValueRequired", "Required value", "spec.drivers[2]"),
        ("FieldValueInvalid", 'Invalid value: "": name part must be non-empty',
         "spec.drivers[2]"),
        ("FieldValueInvalid", f'Invalid value: "": {qualified}', "spec.drivers[2]"),
        ("FieldValueDuplicate", 'Duplicate value: "zone"', "spec.drivers[2]"),
        ("FieldValueInvalid", f'Invalid value: "a b": {qualified}', "spec.drivers[2]"),
        ("FieldValueDuplicate", 'Duplicate value: "ok.example.com"', "spec.drivers[3].name"),
    ]))
    status, _ = await api.get(f"{CSINODES}/node-a")
    assert status == 404


async def test_csinode_update_validates_twice_and_keeps_drivers_immutable(api: API) -> None:
    """The csinode strategy's ValidateUpdate runs ValidateCSINode, then ValidateCSINodeUpdate,
    which validates the new node again (so each cause comes twice; the summary drops the
    repeat) and then reports every driver kept by name that changed, as Go's %#v of the
    internal CSINodeDriver, "field is immutable" (ValidateImmutableField, Semantic equality)."""
    status, _ = await api.post(CSINODES, csinode("node-b", [
        {"name": "a.example.com", "nodeID": "n1", "topologyKeys": ["zone"]}]))
    assert status == 201
    status, body = await api.patch(f"{CSINODES}/node-b", {"spec": {"drivers": [
        {"name": "a.example.com", "nodeID": "n2", "allocatable": {"count": 3}},
        {"nodeID": "x"}]}}, "application/merge-patch+json")
    subdomain = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric "
                 "character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    name_causes = [{"reason": "FieldValueRequired", "message": "Required value",
                    "field": "spec.drivers[1].name"},
                   {"reason": "FieldValueInvalid", "message": f'Invalid value: "": {subdomain}',
                    "field": "spec.drivers[1].name"}]
    assert status == 422
    causes = body["details"]["causes"]
    immutable = causes.pop()
    assert causes == name_causes * 2
    assert immutable["field"] == "spec.drivers" and re.fullmatch(
        r'Invalid value: storage\.CSINodeDriver\{Name:"a\.example\.com", NodeID:"n2", '
        r"TopologyKeys:\[\]string\(nil\), Allocatable:\(\*storage\.VolumeNodeResources\)"
        r"\(0x[0-9a-f]+\)\}: field is immutable", immutable["message"])
    assert body["message"].count("spec.drivers[1].name: Required value") == 1
    status, body = await api.get(f"{CSINODES}/node-b")
    assert body["spec"]["drivers"] == [
        {"name": "a.example.com", "nodeID": "n1", "topologyKeys": ["zone"]}]


async def test_an_apply_after_a_refused_nameless_driver_is_answered(api: API) -> None:
    """What the request fuzzer found: a write of a driver without a name used to be stored,
    and a later server-side apply to that node could not be answered. Now the write is the
    422 and the apply works on the valid node."""
    status, _ = await api.post(CSINODES, csinode("a", []))
    assert status == 201
    status, _ = await api.patch(f"{CSINODES}/a", {"spec": {"drivers": [{"nodeID": "n"}]}},
                                "application/merge-patch+json")
    assert status == 422
    status, body = await api.patch(f"{CSINODES}/a?fieldManager=fuzz", {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "a"}},
        APPLY)
    assert status == 200 and body["metadata"]["name"] == "a"
