"""PersistentVolumeClaim validation over HTTP, case by case, with kube-apiserver 1.32's
(field, reason) causes.

Sources: pkg/apis/core/validation/validation.go (ValidatePersistentVolumeClaim,
ValidatePersistentVolumeClaimSpec, validateDataSource, ValidatePersistentVolumeClaimUpdate,
validateStorageClassUpgradeFromNil), pkg/registry/core/persistentvolumeclaim/strategy.go
(Validate / ValidateUpdate), pkg/features/kube_features.go (RecoverVolumeExpansionFailure:
beta and on in 1.32; VolumeAttributesClass: beta and off).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
SPEC: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}}

REQ, INV, UNSUP, FORB, DUP = ("FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported",
                  "FieldValueForbidden", "FieldValueDuplicate")

# (case, spec changes, expected causes); None in the changes removes the key
CREATE_CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    # ValidatePersistentVolumeClaimSpec: "at least 1 access mode is required"
    ("no-access-modes", {"accessModes": None}, {("spec.accessModes", REQ): 1}),
    ("unknown-access-mode", {"accessModes": ["ReadWriteSometimes"]},
     {("spec.accessModes", UNSUP): 1}),
    ("once-pod-with-others", {"accessModes": ["ReadWriteOncePod", "ReadOnlyMany"]},
     {("spec.accessModes", FORB): 1}),
    # the storage request is required, positive, and the key path is resources[storage]
    ("no-storage", {"resources": {"requests": {}}}, {("spec.resources[storage]", REQ): 1}),
    ("zero-storage", {"resources": {"requests": {"storage": "0"}}},
     {("spec.resources[storage]", INV): 1}),
    ("bad-class", {"storageClassName": "Fast_SSD"}, {("spec.storageClassName", INV): 1}),
    ("bad-volume-mode", {"volumeMode": "Raw"}, {("spec.volumeMode", UNSUP): 1}),
    # ValidateLabelSelector
    ("bad-selector", {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
     {("spec.selector.matchExpressions[0].operator", INV): 1}),
    # validateDataSource: a kind in the core group must be a claim; name and kind required
    ("data-source-core-kind", {"dataSource": {"kind": "Secret", "name": "s"}},
     {("spec.dataSource", INV): 1}),
    ("data-source-unnamed", {"dataSource": {"kind": "PersistentVolumeClaim"}},
     {("spec.dataSource.name", REQ): 1}),
]


def _claim(name: str, changes: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(("case", "changes", "expected"), CREATE_CASES,
                         ids=[c[0] for c in CREATE_CASES])
def test_claim_create_is_validated(kube: Kube, case: str, changes: dict[str, Any],
                                   expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", CLAIMS, _claim(case, changes)) == Counter(expected)


def test_claim_messages_are_kubernetes_words(kube: Kube) -> None:
    assert kube.messages("POST", CLAIMS, _claim("words", {
        "accessModes": ["ReadWriteSometimes"], "resources": {"requests": {}}})) == {
        "spec.accessModes": ['Unsupported value: "ReadWriteSometimes": supported values: '
                             '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", '
                             '"ReadWriteOncePod"'],
        "spec.resources[storage]": ["Required value"]}


def _create(kube: Kube, name: str, **changes: Any) -> dict[str, Any]:
    status, claim = kube.call("POST", CLAIMS, _claim(name, changes))
    assert status == 201, claim
    return dict(claim)


def _bind(kube: Kube, name: str, capacity: str) -> None:
    status, body = kube.call("PATCH", f"{CLAIMS}/{name}/status", {"status": {
        "phase": "Bound", "capacity": {"storage": capacity}}}, MERGE)
    assert status == 200, body


def test_claim_spec_is_immutable_except_binding_fields(kube: Kube) -> None:
    """ValidatePersistentVolumeClaimUpdate: the binder may set volumeName once and a nil
    storageClassName may be set once; anything else in the spec is Forbidden at ``spec``,
    an unbound claim's storage request included."""
    _create(kube, "fixed")
    allowed: list[dict[str, Any]] = [{"spec": {"volumeName": "pv-1"}},
                                     {"spec": {"storageClassName": "slow"}}]
    for patch in allowed:
        status, body = kube.call("PATCH", f"{CLAIMS}/fixed", patch, MERGE)
        assert status == 200, body
    refused: list[dict[str, Any]] = [
        {"spec": {"volumeName": "pv-2"}}, {"spec": {"storageClassName": "fast"}},
        {"spec": {"accessModes": ["ReadWriteMany"]}},
        {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}]
    for patch in refused:
        assert kube.reject("PATCH", f"{CLAIMS}/fixed", patch, MERGE) == Counter(
            {("spec", FORB): 1}), patch
    messages = kube.messages("PATCH", f"{CLAIMS}/fixed",
                             {"spec": {"accessModes": ["ReadWriteMany"]}}, MERGE)
    assert messages["spec"][0].startswith(
        "Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims\n")


def test_claim_volume_mode_is_immutable(kube: Kube) -> None:
    """ValidateImmutableField(volumeMode) under the Go path ``volumeMode`` (no ``spec.``),
    besides the spec rule."""
    _create(kube, "mode")
    assert kube.reject("PATCH", f"{CLAIMS}/mode", {"spec": {"volumeMode": "Block"}},
                       MERGE) == Counter({("spec", FORB): 1, ("volumeMode", INV): 1})


def test_bound_claim_may_grow_and_shrink_only_above_its_capacity(kube: Kube) -> None:
    """A bound claim's storage request may change (expansion); with
    RecoverVolumeExpansionFailure (on in 1.32) it may come back down, but not to or below
    status.capacity. (Growing also needs a class that allows expansion: the
    PersistentVolumeClaimResize admission plugin.)"""
    status, body = kube.call("POST", "/apis/storage.k8s.io/v1/storageclasses", {
        "metadata": {"name": "expandable"}, "provisioner": "example.com/none",
        "allowVolumeExpansion": True})
    assert status == 201, body
    _create(kube, "grow", storageClassName="expandable")
    _bind(kube, "grow", "1Gi")
    for size in ("3Gi", "2Gi"):
        status, body = kube.call("PATCH", f"{CLAIMS}/grow", {
            "spec": {"resources": {"requests": {"storage": size}}}}, MERGE)
        assert (status, body["spec"]["resources"]["requests"]["storage"]) == (200, size)
    assert kube.messages("PATCH", f"{CLAIMS}/grow", {
        "spec": {"resources": {"requests": {"storage": "1Gi"}}}}, MERGE) == {
        "spec.resources.requests.storage": [
            "Forbidden: field can not be less than status.capacity"]}


def test_claim_update_revalidates_the_claim(kube: Kube) -> None:
    """ValidatePersistentVolumeClaimUpdate runs ValidatePersistentVolumeClaim on the new
    claim: removing the access modes is both invalid and a spec change."""
    _create(kube, "again")
    claim_path = f"{CLAIMS}/again"
    assert kube.reject("PATCH", claim_path, {"spec": {"accessModes": None}}, MERGE) == Counter(
        {("spec.accessModes", REQ): 1, ("spec", FORB): 1})


def test_a_refused_claim_update_quotes_go_cmps_diff_of_the_spec(kube: Kube) -> None:
    """ValidatePersistentVolumeClaimUpdate (kubernetes/kubernetes
    pkg/apis/core/validation/validation.go) appends ``cmp.Diff(oldPvcClone.Spec,
    newPvcClone.Spec)`` over the internal ``core.PersistentVolumeClaimSpec`` to its
    Forbidden message, laid out by go-cmp v0.6.0 as a refused pod update's is
    (tests/cluster/fidelity/test_pod_update_diff.py: the deterministic form, plain spaces).
    The expected text is a real 1.32-era server's answer to the same change, as a user
    pasted it: the storage class changed, two identical fields of context each side, the
    rest counted, a quantity printed as its ``int64Amount`` with its canonical string."""
    status, body = kube.call("POST", CLAIMS, {
        "metadata": {"name": "local-pvc"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-path",
                 "resources": {"requests": {"storage": "500Mi"}}}})
    assert status == 201, body
    messages = kube.messages("PATCH", f"{CLAIMS}/local-pvc",
                             {"spec": {"storageClassName": "local-storage"}}, MERGE)
    assert messages["spec"] == [
        "Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims\n"
        "  core.PersistentVolumeClaimSpec{\n"
        "  \t... // 2 identical fields\n"
        '  \tResources:        {Requests: {s"storage": {i: {...}, s: "500Mi", Format: '
        '"BinarySI"}}},\n'
        '  \tVolumeName:       "",\n'
        '- \tStorageClassName: &"local-path",\n'
        '+ \tStorageClassName: &"local-storage",\n'
        '  \tVolumeMode:       &"Filesystem",\n'
        "  \tDataSource:       nil,\n"
        "  \t... // 2 identical fields\n"
        "  }\n"], messages
