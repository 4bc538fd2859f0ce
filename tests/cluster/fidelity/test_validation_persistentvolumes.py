"""PersistentVolume validation over HTTP, case by case, with kube-apiserver 1.32's
(field, reason) causes.

Sources: pkg/apis/core/validation/validation.go (ValidatePersistentVolume,
ValidatePersistentVolumeSpec, validateLocalVolumeSource, validateCSIPersistentVolumeSource,
validatePVSecretReference, validateVolumeNodeAffinity, ValidatePersistentVolumeUpdate),
pkg/registry/core/persistentvolume/strategy.go (Validate / ValidateUpdate),
pkg/volume/validation/pv_validation.go (checkMountOption).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

VOLUMES = "/api/v1/persistentvolumes"
SPEC: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                        "hostPath": {"path": "/data"}}
AFFINITY = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}

REQ, INV, UNSUP, FORB = ("FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported",
                         "FieldValueForbidden")

# (case, spec changes, expected causes); None in the changes removes the key
CREATE_CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    # "must specify a volume type", Required at spec itself
    ("no-source", {"hostPath": None}, {("spec", REQ): 1}),
    # the second source in Go's order is Forbidden at its own path; the first is validated
    ("two-sources", {"nfs": {"server": "s", "path": "/x"}}, {("spec.nfs", FORB): 1}),
    ("cephfs-second", {"cephfs": {"monitors": ["m"]}}, {("spec.cephFS", FORB): 1}),
    ("three-sources", {"nfs": {"server": "s", "path": "/x"}, "csi": {"driver": "d"}},
     {("spec.nfs", FORB): 1, ("spec.csi", FORB): 1}),
    ("no-access-modes", {"accessModes": None}, {("spec.accessModes", REQ): 1}),
    ("unknown-access-mode", {"accessModes": ["ReadWriteSometimes"]},
     {("spec.accessModes", UNSUP): 1}),
    ("once-pod-with-others", {"accessModes": ["ReadWriteOncePod", "ReadOnlyMany"]},
     {("spec.accessModes", FORB): 1}),
    # capacity: required, storage only, positive
    ("no-capacity", {"capacity": None}, {("spec.capacity", REQ): 1, ("spec.capacity", UNSUP): 1}),
    ("cpu-capacity", {"capacity": {"storage": "1Gi", "cpu": "1"}},
     {("spec.capacity", UNSUP): 1}),
    ("zero-capacity", {"capacity": {"storage": "0"}}, {("spec.capacity[storage]", INV): 1}),
    ("bad-reclaim", {"persistentVolumeReclaimPolicy": "Keep"},
     {("spec.persistentVolumeReclaimPolicy", UNSUP): 1}),
    ("recycle-root", {"persistentVolumeReclaimPolicy": "Recycle", "hostPath": {"path": "/"}},
     {("spec.persistentVolumeReclaimPolicy", FORB): 1}),
    ("bad-class", {"storageClassName": "Fast_SSD"}, {("spec.storageClassName", INV): 1}),
    ("bad-volume-mode", {"volumeMode": "Raw"}, {("spec.volumeMode", UNSUP): 1}),
    ("host-path-missing", {"hostPath": {}}, {("spec.hostPath.path", REQ): 1}),
    # local needs a node affinity; an affinity needs required terms
    ("local-without-affinity", {"hostPath": None, "local": {"path": "/mnt/d"}},
     {("spec.nodeAffinity", REQ): 1}),
    ("affinity-without-required", {"nodeAffinity": {}},
     {("spec.nodeAffinity.required", REQ): 1}),
    ("affinity-without-terms", {"nodeAffinity": {"required": {"nodeSelectorTerms": []}}},
     {("spec.nodeAffinity.required.nodeSelectorTerms", REQ): 1}),
    ("csi-incomplete", {"hostPath": None, "csi": {"driver": ""}},
     {("spec.csi.driver", REQ): 1, ("spec.csi.driver", INV): 1,
      ("spec.csi.volumeHandle", REQ): 1}),
    ("csi-secret-ref", {"hostPath": None, "csi": {
        "driver": "d.example.com", "volumeHandle": "h", "nodePublishSecretRef": {"name": "s"}}},
     {("spec.csi.nodePublishSecretRef.namespace", REQ): 1}),
]


def _volume(name: str, changes: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(("case", "changes", "expected"), CREATE_CASES,
                         ids=[c[0] for c in CREATE_CASES])
def test_volume_create_is_validated(kube: Kube, case: str, changes: dict[str, Any],
                                    expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", VOLUMES, _volume(case, changes)) == Counter(expected)


def test_volume_messages_are_kubernetes_words(kube: Kube) -> None:
    """The messages of ValidatePersistentVolumeSpec's source count and capacity rules."""
    assert kube.messages("POST", VOLUMES, _volume("words", {
        "hostPath": None, "capacity": None})) == {
        "spec.capacity": ["Required value",
                          'Unsupported value: core.ResourceList(nil): supported values: '
                          '"storage"'],
        "spec": ["Required value: must specify a volume type"]}
    assert kube.messages("POST", VOLUMES, _volume("words", {
        "nfs": {"server": "s", "path": "/x"}})) == {
        "spec.nfs": ["Forbidden: may not specify more than 1 volume type"]}


def test_mount_options_annotation_needs_a_mountable_type(kube: Kube) -> None:
    """pv_validation.go checkMountOption: hostPath takes no mount options; NFS does."""
    body = _volume("opts", {})
    body["metadata"]["annotations"] = {"volume.beta.kubernetes.io/mount-options": "ro"}
    assert kube.messages("POST", VOLUMES, body) == {
        "metadata.annotations.volume.beta.kubernetes.io/mount-options": [
            "Forbidden: may not specify mount options for this volume type"]}
    body = _volume("opts-nfs", {"hostPath": None, "nfs": {"server": "s", "path": "/x"}})
    body["metadata"]["annotations"] = {"volume.beta.kubernetes.io/mount-options": "ro"}
    status, answer = kube.call("POST", VOLUMES, body)
    assert status == 201, answer


def test_valid_volume_gets_its_defaults(kube: Kube) -> None:
    """A valid local volume with node affinity is stored with the reclaim policy Retain,
    volumeMode Filesystem and phase Pending (SetDefaults_PersistentVolume, PrepareForCreate)."""
    status, pv = kube.call("POST", VOLUMES, _volume("fine", {
        "hostPath": None, "local": {"path": "/mnt/d"}, "nodeAffinity": AFFINITY}))
    assert status == 201, pv
    assert (pv["spec"]["persistentVolumeReclaimPolicy"], pv["spec"]["volumeMode"],
            pv["status"]["phase"]) == ("Retain", "Filesystem", "Pending")


def test_volume_source_mode_and_affinity_are_immutable(kube: Kube) -> None:
    """ValidatePersistentVolumeUpdate: the source is Forbidden at spec.persistentvolumesource,
    volumeMode and a set nodeAffinity are immutable under their Go paths (no ``spec.``);
    capacity, reclaim policy and class may change."""
    status, pv = kube.call("POST", VOLUMES, _volume("fixed", {"nodeAffinity": AFFINITY}))
    assert status == 201, pv
    path = f"{VOLUMES}/fixed"
    for patch in ({"spec": {"capacity": {"storage": "2Gi"}}},
                  {"spec": {"persistentVolumeReclaimPolicy": "Delete"}},
                  {"spec": {"storageClassName": "slow"}}):
        status, body = kube.call("PATCH", path, patch, MERGE)
        assert status == 200, body
    messages = kube.messages("PATCH", path, {"spec": {"hostPath": {"path": "/other"}}}, MERGE)
    assert list(messages) == ["spec.persistentvolumesource"]
    assert messages["spec.persistentvolumesource"][0].startswith(
        "Forbidden: spec.persistentvolumesource is immutable after creation\n")
    assert kube.reject("PATCH", path, {"spec": {"volumeMode": "Block"}}, MERGE) == Counter(
        {("volumeMode", INV): 1})
    changed = copy.deepcopy(AFFINITY)
    changed["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = ["n2"]
    assert kube.reject("PATCH", path, {"spec": {"nodeAffinity": changed}}, MERGE) == Counter(
        {("nodeAffinity", INV): 1})


def test_volume_without_affinity_may_gain_one(kube: Kube) -> None:
    """ValidatePersistentVolumeUpdate checks the affinity only when the old volume had one."""
    status, pv = kube.call("POST", VOLUMES, _volume("later", {}))
    assert status == 201, pv
    status, body = kube.call("PATCH", f"{VOLUMES}/later", {"spec": {"nodeAffinity": AFFINITY}},
                             MERGE)
    assert status == 200, body


def _warnings(kube: Kube, method: str, path: str, body: dict[str, Any],
              content_type: str = "application/json") -> list[str]:
    resp = kube.http.request(method, path, json=body, headers={"Content-Type": content_type})
    assert resp.status_code in (200, 201), resp.text
    # each header is 299 - "<text>", the text a Go-quoted string
    return [json.loads(h.split(" ", 2)[2]) for h in resp.headers.get_list("warning")]


def test_volume_and_claim_warnings(kube: Kube) -> None:
    """pkg/api/persistentvolume/util.go warningsForPersistentVolumeSpecAndMeta (create and
    update) and pkg/api/persistentvolumeclaim/util.go GetWarningsForPersistentVolumeClaim."""
    body = _volume("warned", {"persistentVolumeReclaimPolicy": "Recycle", "nodeAffinity": {
        "required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}})
    body["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "slow"}
    expected = [
        "metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; "
        'use "storageClassName" attribute instead',
        "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, "
        "the recommended approach is to use dynamic provisioning.",
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key: "
        'beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead']
    assert _warnings(kube, "POST", VOLUMES, body) == expected
    assert _warnings(kube, "PATCH", f"{VOLUMES}/warned",
                     {"spec": {"capacity": {"storage": "2Gi"}}}, MERGE) == expected
    rbd = _volume("rbd", {"hostPath": None, "rbd": {"monitors": ["m"], "image": "i"}})
    assert _warnings(kube, "POST", VOLUMES, rbd) == [
        "spec.rbd: deprecated in v1.28, non-functional in v1.31+"]
    claim = {"metadata": {"name": "warned", "annotations": {
        "volume.beta.kubernetes.io/storage-class": "slow"}}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1500m"}}}}
    assert _warnings(kube, "POST", "/api/v1/namespaces/default/persistentvolumeclaims",
                     claim) == [
        "metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; "
        'use "storageClassName" attribute instead',
        "spec.resources.requests[storage]: fractional byte value \"1500m\" is invalid, must be "
        "an integer"]
