"""Pod update validation over HTTP: what a pod's spec may still change, with
kube-apiserver 1.32's (field, reason) causes.

Sources, pkg/apis/core/validation/validation.go: ValidatePodUpdate (updatablePodSpecFields,
the munged-spec comparison), ValidateContainerUpdates, validateOnlyAddedTolerations,
validateOnlyDeletedSchedulingGates; pkg/registry/core/pod/strategy.go (ValidateUpdate is
ValidatePodUpdate, which validates the new pod again first).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

PODS = "/api/v1/namespaces/default/pods"
JSON_PATCH = "application/json-patch+json"
REQ, INV, FORB = "FieldValueRequired", "FieldValueInvalid", "FieldValueForbidden"
UPDATABLE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)\n")


def _create(kube: Kube, name: str, **spec: Any) -> None:
    status, body = kube.call("POST", PODS, {"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "i"}], **spec}})
    assert status == 201, body


# (case, pod spec at creation, JSON patch, expected causes)
UPDATE_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]],
                         dict[tuple[str, str], int]]] = [
    # ValidateContainerUpdates stops everything else: no containers added or removed
    ("add-container", {}, [{"op": "add", "path": "/spec/containers/-",
                            "value": {"name": "d", "image": "i"}}],
     {("spec.containers", FORB): 1}),
    # an empty image is reported by the pod's validation and by ValidateContainerUpdates
    ("empty-image", {}, [{"op": "replace", "path": "/spec/containers/0/image", "value": ""}],
     {("spec.containers[0].image", REQ): 2}),
    # activeDeadlineSeconds: set, then only lowered; never raised or removed
    ("raise-deadline", {"activeDeadlineSeconds": 100},
     [{"op": "replace", "path": "/spec/activeDeadlineSeconds", "value": 200}],
     {("spec.activeDeadlineSeconds", INV): 1}),
    ("remove-deadline", {"activeDeadlineSeconds": 100},
     [{"op": "remove", "path": "/spec/activeDeadlineSeconds"}],
     {("spec.activeDeadlineSeconds", INV): 1}),
    # tolerations: additions only (tolerationSeconds aside)
    ("change-toleration", {"tolerations": [{"key": "k", "operator": "Exists"}]},
     [{"op": "replace", "path": "/spec/tolerations/0/key", "value": "other"}],
     {("spec.tolerations", FORB): 1}),
    # schedulingGates: removals only
    ("add-gate", {"schedulingGates": [{"name": "example.com/a"}]},
     [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "example.com/b"}}],
     {("spec.schedulingGates[1].name", FORB): 1}),
    # a gated pod's node selector may gain entries, not change them (ValidatePodUpdate's
    # podIsGated branch, validateNodeSelectorMutation)
    ("gated-node-selector", {"schedulingGates": [{"name": "example.com/a"}],
                             "nodeSelector": {"zone": "a"}},
     [{"op": "replace", "path": "/spec/nodeSelector/zone", "value": "b"}],
     {("spec.nodeSelector", INV): 1}),
    ("ungated-node-selector", {"nodeSelector": {"zone": "a"}},
     [{"op": "add", "path": "/spec/nodeSelector/disk", "value": "ssd"}],
     {("spec", FORB): 1}),
    # anything else: the munged specs differ
    ("restart-policy", {}, [{"op": "replace", "path": "/spec/restartPolicy",
                             "value": "Never"}],
     {("spec", FORB): 1}),
    ("container-env", {}, [{"op": "add", "path": "/spec/containers/0/env",
                            "value": [{"name": "A", "value": "1"}]}],
     {("spec", FORB): 1}),
]


@pytest.mark.parametrize(("case", "spec", "patch", "expected"), UPDATE_CASES,
                         ids=[c[0] for c in UPDATE_CASES])
def test_pod_update_rules(kube: Kube, case: str, spec: dict[str, Any],
                          patch: list[dict[str, Any]],
                          expected: dict[tuple[str, str], int]) -> None:
    _create(kube, case, **spec)
    assert kube.reject("PATCH", f"{PODS}/{case}", patch, JSON_PATCH) == Counter(expected)


def test_pod_update_messages(kube: Kube) -> None:
    _create(kube, "words", activeDeadlineSeconds=100)
    got = kube.messages("PATCH", f"{PODS}/words", {"spec": {"restartPolicy": "Never"}}, MERGE)
    assert got["spec"][0].startswith(UPDATABLE)
    got = kube.messages("PATCH", f"{PODS}/words", [
        {"op": "remove", "path": "/spec/activeDeadlineSeconds"}], JSON_PATCH)
    assert got == {"spec.activeDeadlineSeconds": [
        'Invalid value: "null": must not update from a positive integer to nil value']}
    got = kube.messages("PATCH", f"{PODS}/words", {"spec": {"activeDeadlineSeconds": 101}},
                        MERGE)
    assert got == {"spec.activeDeadlineSeconds": [
        "Invalid value: 101: must be less than or equal to previous value"]}


def test_pod_updates_that_are_allowed(kube: Kube) -> None:
    """Images, a lower deadline, added tolerations (and new tolerationSeconds on a NoExecute
    one), a node selector while the pod is gated, removed scheduling gates: each accepted."""
    _create(kube, "ok", activeDeadlineSeconds=100,
            tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute",
                          "tolerationSeconds": 10}],
            schedulingGates=[{"name": "example.com/a"}])
    for patch in (
            [{"op": "replace", "path": "/spec/containers/0/image", "value": "i2"}],
            [{"op": "replace", "path": "/spec/activeDeadlineSeconds", "value": 50}],
            [{"op": "replace", "path": "/spec/tolerations/0/tolerationSeconds", "value": 20}],
            [{"op": "add", "path": "/spec/tolerations/-",
              "value": {"key": "j", "operator": "Exists"}}],
            [{"op": "add", "path": "/spec/nodeSelector", "value": {"disk": "ssd"}}],
            [{"op": "remove", "path": "/spec/schedulingGates"}]):
        status, body = kube.call("PATCH", f"{PODS}/ok", patch, JSON_PATCH)
        assert status == 200, (patch, body)
    status, body = kube.call("GET", f"{PODS}/ok")
    spec = body["spec"]
    mine = {t["key"]: t.get("tolerationSeconds") for t in spec["tolerations"]
            if t["key"] in ("k", "j")}  # (DefaultTolerationSeconds adds its own two)
    assert (spec["containers"][0]["image"], spec["activeDeadlineSeconds"], mine,
            spec.get("schedulingGates")) == ("i2", 50, {"k": 20, "j": None}, None)


def test_the_new_pods_own_causes_come_before_the_update_rules(kube: Kube) -> None:
    """pkg/apis/core/validation/validation.go ValidatePodUpdate (v1.32): the new pod is
    validated (validatePodMetadataAndSpec: ``activeDeadlineSeconds`` between 1 and MaxInt32)
    before the update rule (between 0 and MaxInt32, then stop), so the message lists them in
    that order; 0 passes the update rule and meets only the spec's."""
    _create(kube, "deadline-order", activeDeadlineSeconds=30)
    status, body = kube.call("PATCH", f"{PODS}/deadline-order",
                             {"spec": {"activeDeadlineSeconds": -1}}, MERGE)
    assert status == 422, body
    assert body["message"] == (
        'Pod "deadline-order" is invalid: [spec.activeDeadlineSeconds: Invalid value: -1: '
        "must be between 1 and 2147483647, inclusive, spec.activeDeadlineSeconds: Invalid "
        "value: -1: must be between 0 and 2147483647, inclusive]")
    got = kube.messages("PATCH", f"{PODS}/deadline-order",
                        {"spec": {"activeDeadlineSeconds": 0}}, MERGE)
    assert got == {"spec.activeDeadlineSeconds": [
        "Invalid value: 0: must be between 1 and 2147483647, inclusive"]}
