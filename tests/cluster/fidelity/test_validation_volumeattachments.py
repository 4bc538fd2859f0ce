"""VolumeAttachment validation and strategy over HTTP, with kube-apiserver 1.32's causes.

Sources: pkg/apis/storage/validation/validation.go (ValidateVolumeAttachment,
ValidateVolumeAttachmentV1, validateVolumeAttachmentSource, ValidateVolumeAttachmentUpdate:
the spec is read-only) and pkg/registry/storage/volumeattachment/strategy.go (a zero status
on create, the status kept by updates of the main resource).
"""

from __future__ import annotations

from collections import Counter

from tests.cluster.fidelity.builtin_server import MERGE, Kube

ATTACHMENTS = "/apis/storage.k8s.io/v1/volumeattachments"


def test_volume_attachment_spec_is_validated(kube: Kube) -> None:
    # an empty attacher: validateAttacher's Required, then ValidateCSIDriverName's
    # Required and its DNS-subdomain check, which runs on the empty name too
    assert kube.reject("POST", ATTACHMENTS, {"metadata": {"name": "va-empty"},
                                             "spec": {"nodeName": "n1", "source": {}}}) == Counter(
        {("spec.attacher", "FieldValueRequired"): 2, ("spec.attacher", "FieldValueInvalid"): 1,
         ("spec.source", "FieldValueRequired"): 1})
    assert kube.messages("POST", ATTACHMENTS, {"metadata": {"name": "va-empty"}, "spec": {
        "attacher": "csi.example.com", "nodeName": "n1", "source": {}}}) == {
        "spec.source": ["Required value: must specify exactly one of inlineVolumeSpec and "
                        "persistentVolumeName"]}
    assert kube.reject("POST", ATTACHMENTS, {"metadata": {"name": "va-bad"}, "spec": {
        "attacher": "Bad_Driver", "nodeName": "Node_1",
        "source": {"persistentVolumeName": "PV_1"}}}) == Counter({
            ("spec.attacher", "FieldValueInvalid"): 1, ("spec.nodeName", "FieldValueInvalid"): 1,
            ("spec.source.persistentVolumeName", "FieldValueInvalid"): 1})


def test_volume_attachment_status_resets_and_spec_is_read_only(kube: Kube) -> None:
    status, body = kube.call("POST", ATTACHMENTS, {
        "metadata": {"name": "va-fixed"},
        "spec": {"attacher": "csi.example.com", "nodeName": "n1",
                 "source": {"persistentVolumeName": "pv1"}},
        "status": {"attached": True}})
    assert status == 201, body
    path = f"{ATTACHMENTS}/va-fixed"
    try:
        assert body["status"] == {"attached": False}
        assert kube.reject("PATCH", path, {"spec": {"nodeName": "n2"}}, MERGE) == Counter(
            {("spec", "FieldValueInvalid"): 1})
        status, body = kube.call("PATCH", f"{path}/status", {"status": {"attached": True}},
                                 MERGE)
        assert (status, body["status"]["attached"]) == (200, True), body
    finally:
        kube.call("DELETE", path)
