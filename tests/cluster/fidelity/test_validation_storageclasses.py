"""StorageClass validation over HTTP, with kube-apiserver 1.32's causes.

Source: pkg/apis/storage/validation/validation.go (ValidateStorageClass: validateProvisioner,
validateParameters, validateReclaimPolicy, validateVolumeBindingMode;
ValidateStorageClassUpdate: parameters, provisioner, reclaimPolicy and volumeBindingMode are
fixed), as
pkg/registry/storage/storageclass/strategy.go calls them.
"""

from __future__ import annotations

from collections import Counter

from tests.cluster.fidelity.builtin_server import MERGE, Kube

CLASSES = "/apis/storage.k8s.io/v1/storageclasses"


def test_storage_class_provisioner_and_parameters_are_validated(kube: Kube) -> None:
    assert kube.messages("POST", CLASSES, {"metadata": {"name": "sc-no-provisioner"}}) == {
        "provisioner": ["Required value"]}
    assert kube.reject("POST", CLASSES, {"metadata": {"name": "sc-bad"},
                                         "provisioner": "a b/c"}) == Counter(
        {("provisioner", "FieldValueInvalid"): 1})
    # parameters of 256 KiB and more in all
    big = {"metadata": {"name": "sc-big"}, "provisioner": "example.com/disk",
           "parameters": {"k": "v" * (256 * 1024)}}
    assert kube.messages("POST", CLASSES, big) == {
        "parameters": ["Too long: may not be more than 262144 bytes"]}
    assert kube.messages("POST", CLASSES, {
        "metadata": {"name": "sc-modes"}, "provisioner": "example.com/disk",
        "reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}) == {
        "reclaimPolicy": ['Unsupported value: "Recycle": supported values: "Delete", "Retain"'],
        "volumeBindingMode": ['Unsupported value: "Later": supported values: "Immediate", '
                              '"WaitForFirstConsumer"']}


def test_storage_class_provisioner_and_parameters_are_immutable(kube: Kube) -> None:
    status, body = kube.call("POST", CLASSES, {
        "metadata": {"name": "sc-fixed"}, "provisioner": "example.com/disk",
        "parameters": {"type": "ssd"}})
    assert status == 201, body
    path = f"{CLASSES}/sc-fixed"
    try:
        assert (body["reclaimPolicy"], body["volumeBindingMode"]) == ("Delete", "Immediate")
        assert kube.messages("PATCH", path, {"provisioner": "example.com/other",
                                             "parameters": {"type": "hdd"}}, MERGE) == {
            "parameters": ["Forbidden: updates to parameters are forbidden."],
            "provisioner": ["Forbidden: updates to provisioner are forbidden."]}
        assert kube.messages("PATCH", path, {"reclaimPolicy": "Retain",
                                             "volumeBindingMode": "WaitForFirstConsumer"},
                             MERGE) == {
            "reclaimPolicy": ["Forbidden: updates to reclaimPolicy are forbidden."],
            "volumeBindingMode": ['Invalid value: "WaitForFirstConsumer": field is immutable']}
        # other fields stay writable
        status, body = kube.call("PATCH", path, {"allowVolumeExpansion": True}, MERGE)
        assert (status, body.get("allowVolumeExpansion")) == (200, True), body
    finally:
        kube.call("DELETE", path)
