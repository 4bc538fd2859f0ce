"""Pod volume source validation over HTTP, case by case, with kube-apiserver 1.32's (field,
reason) causes and words.

Sources, pkg/apis/core/validation/validation.go: validateVolumeSource (one source a volume,
the second Forbidden at its own, oddly spelled, path; the ephemeral claim's name),
validateHostPathVolumeSource, validateHostPathType, validateNFSVolumeSource,
validateISCSIVolumeSource, validateDownwardAPIVolumeSource, validateDownwardAPIVolumeFile,
validateObjectFieldSelector, validateContainerResourceFieldSelector,
validateProjectedVolumeSource, validateProjectionSources, validateKeyToPath,
ValidateLocalNonReservedPath, validateLocalDescendingPath, validatePathNoBacksteps,
validateCSIVolumeSource, ValidateCSIDriverName, validateEphemeralVolumeSource,
ValidatePersistentVolumeClaimTemplate, ValidateTemplateObjectMeta;
pkg/apis/core/pods/helpers.go (ConvertDownwardAPIFieldLabel).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

PODS = "/api/v1/namespaces/default/pods"
REQ, INV, UNSUP, FORB, LONG = ("FieldValueRequired", "FieldValueInvalid",
                               "FieldValueNotSupported", "FieldValueForbidden",
                               "FieldValueTooLong")
V0 = "spec.volumes[0]"
CLAIM_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}

# (case, the volume (named "v"), expected causes)
CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    # validateVolumeSource: the first source is validated, each further one Forbidden under
    # the path Go spells for it ("downwarAPI")
    ("more-than-one", {"hostPath": {"path": "/x/../y"}, "nfs": {"server": "s", "path": "/p"},
                       "downwardAPI": {}},
     {(f"{V0}.hostPath.path", INV): 1, (f"{V0}.nfs", FORB): 1, (f"{V0}.downwarAPI", FORB): 1}),
    # validateHostPathVolumeSource stops at a missing path, the type unchecked
    ("host-path-empty", {"hostPath": {"path": "", "type": "Dir"}},
     {(f"{V0}.hostPath.path", REQ): 1}),
    ("host-path-type", {"hostPath": {"path": "/a/../../b", "type": "Dir"}},
     {(f"{V0}.hostPath.path", INV): 1, (f"{V0}.hostPath.type", UNSUP): 1}),
    # validateNFSVolumeSource: an empty path is required and not absolute
    ("nfs", {"nfs": {}}, {(f"{V0}.nfs.server", REQ): 1, (f"{V0}.nfs.path", REQ): 1,
                          (f"{V0}.nfs.path", INV): 1}),
    ("nfs-relative", {"nfs": {"server": "s", "path": "data"}}, {(f"{V0}.nfs.path", INV): 1}),
    # validateISCSIVolumeSource (the initiator's field is "initiatorname")
    ("iscsi", {"iscsi": {"targetPortal": "", "iqn": "bad", "lun": 300,
                         "chapAuthSession": True, "initiatorName": "iqn.bad"}},
     {(f"{V0}.iscsi.targetPortal", REQ): 1, (f"{V0}.iscsi.iqn", INV): 1,
      (f"{V0}.iscsi.lun", INV): 1, (f"{V0}.iscsi.secretRef", REQ): 1,
      (f"{V0}.iscsi.initiatorname", INV): 1}),
    # validateDownwardAPIVolumeFile: errors under the source, not the item
    ("downward-api", {"downwardAPI": {"defaultMode": 512, "items": [
        {"path": "..a", "fieldRef": {"fieldPath": "spec.nodeName"}},
        {"path": "b"},
        {"path": "/abs", "mode": -1, "fieldRef": {"fieldPath": "metadata.name"},
         "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu"}},
        {"path": "e", "fieldRef": {"fieldPath": "metadata.labels['a b']"}},
        {"path": "f", "fieldRef": {"fieldPath": "status.nothing"}},
        {"path": "g", "resourceFieldRef": {"resource": "limits.cpu"}},
        {"path": "h", "resourceFieldRef": {"containerName": "c", "resource": "limits.gpu"}},
        {"path": "../i", "fieldRef": {"fieldPath": "metadata.uid"}},
        {"path": "j", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu",
                                           "divisor": "2"}},
        {"path": "k", "resourceFieldRef": {"containerName": "c", "resource": "requests.memory",
                                           "divisor": "3Mi"}}]}},
     {(f"{V0}.downwardAPI.defaultMode", INV): 1, (f"{V0}.downwardAPI.path", INV): 3,
      (f"{V0}.downwardAPI.fieldRef.fieldPath", UNSUP): 1,
      (f"{V0}.downwardAPI.fieldRef.fieldPath", INV): 1,
      (f"{V0}.downwardAPI", REQ): 1, (f"{V0}.downwardAPI", INV): 1,
      (f"{V0}.downwardAPI.mode", INV): 1, (f"{V0}.downwardAPI.fieldRef", INV): 1,
      (f"{V0}.downwardAPI.resourceFieldRef.containerName", REQ): 1,
      (f"{V0}.downwardAPI.resourceFieldRef.resource", UNSUP): 1,
      (f"{V0}.downwardAPI.resourceFieldRef.divisor", INV): 2}),
    # validateProjectionSources: one kind per source, each path once across all of them
    ("projected", {"projected": {"defaultMode": 512, "sources": [
        {"secret": {"items": [{"key": "k", "path": "../x"}]}},
        {"configMap": {"name": "c", "items": [{"key": "k", "path": "a"}]},
         "downwardAPI": {"items": [{"path": "a", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"serviceAccountToken": {"path": "", "expirationSeconds": 60}},
        {"serviceAccountToken": {"path": "/t", "expirationSeconds": 5000000000}}]}},
     {(f"{V0}.projected.defaultMode", INV): 1,
      (f"{V0}.projected.sources[0].secret.name", REQ): 1,
      (f"{V0}.projected.sources[0].secret.items[0].path", INV): 1,
      (f"{V0}.projected", INV): 1, (f"{V0}.projected.sources[1]", FORB): 1,
      (f"{V0}.projected.sources[2].serviceAccountToken.expirationSeconds", INV): 1,
      (f"{V0}.projected.path", REQ): 1,
      (f"{V0}.projected.sources[3].serviceAccountToken.expirationSeconds", INV): 1,
      (f"{V0}.projected.path", INV): 1}),
    # ValidateCSIDriverName runs every check; a node-publish secret's bad name is "csi.name"
    ("csi-empty", {"csi": {"driver": ""}}, {(f"{V0}.csi.driver", REQ): 1,
                                            (f"{V0}.csi.driver", INV): 1}),
    ("csi-long", {"csi": {"driver": "d" * 64, "nodePublishSecretRef": {"name": "Bad_Name"}}},
     {(f"{V0}.csi.driver", LONG): 1, (f"{V0}.csi.name", INV): 1}),
    ("csi-secret", {"csi": {"driver": "csi.example.com", "nodePublishSecretRef": {}}},
     {(f"{V0}.csi.nodePublishSecretRef.name", REQ): 1}),
    # validateEphemeralVolumeSource / ValidateTemplateObjectMeta: labels and annotations only
    ("ephemeral-missing", {"ephemeral": {}}, {(f"{V0}.ephemeral.volumeClaimTemplate", REQ): 1}),
    ("ephemeral-meta", {"ephemeral": {"volumeClaimTemplate": {
        "metadata": {"name": "x", "namespace": "y", "labels": {"a b": "c"}},
        "spec": {"accessModes": []}}}},
     {(f"{V0}.ephemeral.volumeClaimTemplate.metadata.labels", INV): 1,
      (f"{V0}.ephemeral.volumeClaimTemplate.metadata.name", FORB): 1,
      (f"{V0}.ephemeral.volumeClaimTemplate.metadata.namespace", FORB): 1,
      (f"{V0}.ephemeral.volumeClaimTemplate.spec.accessModes", REQ): 1,
      (f"{V0}.ephemeral.volumeClaimTemplate.spec.resources[storage]", REQ): 1}),
]


def _pod(name: str, volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     "volumes": copy.deepcopy(volumes)}}


@pytest.mark.parametrize(("case", "volume", "expected"), CASES, ids=[c[0] for c in CASES])
def test_volume_sources_are_validated(kube: Kube, case: str, volume: dict[str, Any],
                                      expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", PODS, _pod(case, [{"name": "v", **volume}])) == Counter(expected)


def test_volume_source_messages_are_kubernetes_words(kube: Kube) -> None:
    got = kube.messages("POST", PODS, _pod("words", [
        {"name": "p", "projected": {"sources": [
            {"configMap": {"name": "c", "items": [{"key": "k", "path": "a"}]}},
            {"secret": {"name": "s", "items": [{"key": "k", "path": "a"}]}}]}},
        {"name": "d", "downwardAPI": {"items": [
            {"path": "..a", "fieldRef": {"fieldPath": "spec.nodeName"}},
            {"path": "b", "fieldRef": {"fieldPath": "spec.nope"}}]}},
        {"name": "c", "csi": {"driver": "d" * 64}},
        {"name": "two", "emptyDir": {}, "csi": {"driver": "x"}}]))
    assert got == {
        "spec.volumes[0].projected": ['Invalid value: "s": conflicting duplicate paths'],
        "spec.volumes[1].downwardAPI.path": ['Invalid value: "..a": must not start with \'..\''],
        "spec.volumes[1].downwardAPI.fieldRef.fieldPath": [
            'Unsupported value: "spec.nodeName": supported values: "metadata.annotations", '
            '"metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"',
            'Invalid value: "spec.nope": error converting fieldPath: field label not '
            "supported: spec.nope"],
        "spec.volumes[2].csi.driver": ["Too long: may not be more than 63 bytes"],
        "spec.volumes[3].csi": ["Forbidden: may not specify more than 1 volume type"]}


def test_an_ephemeral_volume_claim_must_have_a_valid_name(kube: Kube) -> None:
    """validateVolumeSource: the claim ``<pod>-<volume>`` must be a valid name, reported on
    the volume's own name."""
    pod_name = "p" * 250
    got = kube.messages("POST", PODS, _pod(pod_name, [
        {"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": CLAIM_SPEC}}}]))
    assert got == {"spec.volumes[0].name": [
        f'Invalid value: "data": PVC name "{pod_name}-data": must be no more than 253 '
        "characters"]}


def test_well_formed_volume_sources_are_accepted(kube: Kube) -> None:
    status, body = kube.call("POST", PODS, {
        "metadata": {"name": "fine-volumes"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {
                     "limits": {"cpu": "1"}}}],
                 "volumes": [
            {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}},
            {"name": "share", "nfs": {"server": "nfs.example.com", "path": "/exports"}},
            {"name": "info", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "team", "fieldRef": {"fieldPath": "metadata.annotations['Team']"}},
                {"path": "cpu", "resourceFieldRef": {"containerName": "c",
                                                     "resource": "limits.cpu"}},
                {"path": "mem", "resourceFieldRef": {"containerName": "c", "divisor": "1Mi",
                                                     "resource": "limits.memory"}},
                {"path": "milli", "resourceFieldRef": {"containerName": "c", "divisor": "1m",
                                                       "resource": "requests.cpu"}}]}},
            {"name": "all", "projected": {"defaultMode": 0o440, "sources": [
                {"configMap": {"name": "c", "items": [{"key": "k", "path": "conf/a"}]}},
                {"secret": {"name": "s"}},
                {"downwardAPI": {"items": [{"path": "name",
                                            "fieldRef": {"fieldPath": "metadata.name"}}]}},
                {"serviceAccountToken": {"path": "token", "audience": "api"}}]}},
            {"name": "inline", "csi": {"driver": "csi.example.com",
                                       "nodePublishSecretRef": {"name": "creds"}}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "metadata": {"labels": {"app": "x"}}, "spec": CLAIM_SPEC}}}]}})
    assert status == 201, body
