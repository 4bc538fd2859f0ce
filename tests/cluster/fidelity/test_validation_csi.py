"""CSIDriver, CSIStorageCapacity and StorageClass allowedTopologies validation over HTTP,
with kube-apiserver 1.32's causes.

Source: pkg/apis/storage/validation/validation.go (ValidateCSIDriver → validateCSIDriverSpec,
ValidateCSIDriverUpdate; ValidateCSIStorageCapacity, ValidateCSIStorageCapacityUpdate;
ValidateStorageClass → validateAllowedTopologies, with pkg/apis/core/validation's
ValidateTopologySelectorTerm), as pkg/registry/storage/{csidriver,csistoragecapacity,
storageclass}/strategy.go call them, after pkg/apis/storage/v1/defaults.go
(SetDefaults_CSIDriver).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

DRIVERS = "/apis/storage.k8s.io/v1/csidrivers"
CAPACITIES = "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"


def causes(kube: Kube, method: str, path: str, body: Any,
           content_type: str = "application/json") -> list[tuple[str, str, str]]:
    status, answer = kube.call(method, path, body, content_type)
    assert (status, answer.get("reason")) == (422, "Invalid"), answer
    return [(c["field"], c["reason"], c["message"]) for c in answer["details"]["causes"]]


def test_csi_driver_defaults_and_spec_rules(kube: Kube) -> None:
    status, body = kube.call("POST", DRIVERS, {"metadata": {"name": "d.example.com"},
                                               "spec": {}})
    assert status == 201, body
    assert body["spec"] == {
        "attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
        "requiresRepublish": False, "seLinuxMount": False}
    kube.call("DELETE", f"{DRIVERS}/d.example.com")
    assert causes(kube, "POST", DRIVERS, {"metadata": {"name": "bad.example.com"}, "spec": {
        "fsGroupPolicy": "Always", "volumeLifecycleModes": ["Persistent", "Forever"],
        "tokenRequests": [{"audience": "a", "expirationSeconds": 60},
                          {"audience": "a", "expirationSeconds": 1},
                          {"audience": "b", "expirationSeconds": (1 << 32) + 1}]}}) == [
        ("spec.fsGroupPolicy", "FieldValueNotSupported",
         'Unsupported value: "Always": supported values: "File", "None", '
         '"ReadWriteOnceWithFSType"'),
        ("spec.tokenRequests[0].expirationSeconds", "FieldValueInvalid",
         "Invalid value: 60: may not specify a duration less than 10 minutes"),
        ("spec.tokenRequests[1].audience", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.tokenRequests[2].expirationSeconds", "FieldValueInvalid",
         "Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"),
        ("spec.volumeLifecycleModes", "FieldValueNotSupported",
         'Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"')]


def test_csi_driver_update_keeps_attach_and_modes(kube: Kube) -> None:
    status, body = kube.call("POST", DRIVERS, {"metadata": {"name": "u.example.com"}})
    assert status == 201, body
    try:
        assert causes(kube, "PATCH", f"{DRIVERS}/u.example.com", {"spec": {
            "attachRequired": False, "volumeLifecycleModes": ["Ephemeral"],
            "fsGroupPolicy": "Sometimes"}}, MERGE) == [
            ("spec.fsGroupPolicy", "FieldValueNotSupported",
             'Unsupported value: "Sometimes": supported values: "File", "None", '
             '"ReadWriteOnceWithFSType"'),
            ("spec.fsGroupPolicy", "FieldValueNotSupported",
             'Unsupported value: "Sometimes": supported values: "File", "None", '
             '"ReadWriteOnceWithFSType"'),
            ("spec.attachedRequired", "FieldValueInvalid", "Invalid value: false: field is "
                                                           "immutable"),
            ("spec.volumeLifecycleModes", "FieldValueInvalid",
             'Invalid value: []storage.VolumeLifecycleMode{"Ephemeral"}: field is immutable')]
        status, body = kube.call("PATCH", f"{DRIVERS}/u.example.com",
                                 {"spec": {"podInfoOnMount": True}}, MERGE)
        assert (status, body["spec"]["podInfoOnMount"]) == (200, True), body
    finally:
        kube.call("DELETE", f"{DRIVERS}/u.example.com")


def test_csi_driver_generation_moves_with_spec_changes_only(kube: Kube) -> None:
    """Rule: a CSIDriver's PrepareForCreate sets no generation (Go's 0, omitted); its
    PrepareForUpdate adds one to the stored generation when the spec changes at all (0 -> 1
    on the first change), and leaves it on a metadata-only write; a generation the request
    sends is replaced by the stored one (rest.BeforeUpdate).
    Source: pkg/registry/storage/csidriver/strategy.go (PrepareForCreate, PrepareForUpdate:
    "Any changes to the spec increment the generation number"), strategy_test.go
    (TestCSIDriverPrepareForUpdate: wantGeneration 1 from a driver without one),
    staging/src/k8s.io/apiserver/pkg/registry/rest/update.go (BeforeUpdate)."""
    path = f"{DRIVERS}/g.example.com"
    status, body = kube.call("POST", DRIVERS, {"metadata": {"name": "g.example.com"}})
    assert status == 201, body
    try:
        assert "generation" not in body["metadata"]
        steps: list[tuple[dict[str, Any], int | None]] = [
            ({"metadata": {"labels": {"a": "b"}}}, None),
            ({"spec": {"podInfoOnMount": True}}, 1),
            ({"metadata": {"labels": {"a": "c"}, "generation": 9}}, 1),
            ({"spec": {"tokenRequests": [{"audience": "x"}], "requiresRepublish": True}}, 2),
            ({"spec": {"seLinuxMount": True}}, 3),
            ({"spec": {"seLinuxMount": True}}, 3),
        ]
        for patch, generation in steps:
            status, body = kube.call("PATCH", path, patch, MERGE)
            assert (status, body["metadata"].get("generation")) == (200, generation), (patch,
                                                                                        body)
    finally:
        kube.call("DELETE", path)


def test_csi_storage_capacity_rules(kube: Kube) -> None:
    assert causes(kube, "POST", CAPACITIES, {
        "metadata": {"name": "cap-bad"}, "storageClassName": "Fast_SSD", "capacity": "-1Gi",
        "nodeTopology": {"matchLabels": {"a b": "c"}}}) == [
        ("nodeTopology.matchLabels", "FieldValueInvalid",
         "Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' "
         "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("storageClassName", "FieldValueInvalid",
         "Invalid value: \"Fast_SSD\": a lowercase RFC 1123 subdomain must consist of lower "
         "case alphanumeric characters, '-' or '.', and must start and end with an "
         "alphanumeric character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
        ("capacity", "FieldValueInvalid",
         'Invalid value: "-1Gi": must be greater than or equal to 0')]
    status, body = kube.call("POST", CAPACITIES, {
        "metadata": {"name": "cap-ok"}, "storageClassName": "fast", "capacity": "1Gi",
        "nodeTopology": {"matchLabels": {"zone": "a"}}})
    assert status == 201, body
    try:
        assert causes(kube, "PATCH", f"{CAPACITIES}/cap-ok", {
            "storageClassName": "slow", "nodeTopology": {"matchLabels": {"zone": "b"}}},
            MERGE) == [
            ("nodeTopology", "FieldValueInvalid",
             'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"zone":"b"}, '
             "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"),
            ("storageClassName", "FieldValueInvalid",
             'Invalid value: "slow": field is immutable')]
    finally:
        kube.call("DELETE", f"{CAPACITIES}/cap-ok")


TOPOLOGY_CASES: list[tuple[str, list[Any], list[tuple[str, str, str]]]] = [
    ("values", [{"matchLabelExpressions": [{"key": "zone", "values": []},
                                           {"key": "rack", "values": ["a", "a"]}]}], [
        ("allowedTopologies[0].matchLabelExpressions[0].values", "FieldValueRequired",
         "Required value"),
        ("allowedTopologies[0].matchLabelExpressions[1].values[1]", "FieldValueDuplicate",
         'Duplicate value: "a"')]),
    ("keys", [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]},
                                         {"key": "zone", "values": ["b"]},
                                         {"key": "-x", "values": ["c"]}]}], [
        ("allowedTopologies[0].matchLabelExpressions[1].key", "FieldValueDuplicate",
         'Duplicate value: "zone"'),
        ("allowedTopologies[0].matchLabelExpressions[2].key", "FieldValueInvalid",
         "Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' "
         "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]),
    ("terms", [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]},
               {"matchLabelExpressions": [{"key": "zone", "values": ["b", "a"]}]}], [
        ("allowedTopologies[1].matchLabelExpressions", "FieldValueDuplicate",
         'Duplicate value: ""')]),
]


@pytest.mark.parametrize(("name", "topologies", "expected"), TOPOLOGY_CASES,
                         ids=[c[0] for c in TOPOLOGY_CASES])
def test_storage_class_allowed_topologies(kube: Kube, name: str, topologies: list[Any],
                                          expected: list[tuple[str, str, str]]) -> None:
    assert causes(kube, "POST", CLASSES, {
        "metadata": {"name": f"sc-topo-{name}"}, "provisioner": "example.com/disk",
        "allowedTopologies": topologies}) == expected
