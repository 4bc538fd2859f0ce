"""Ephemeral containers over HTTP: the ``pods/ephemeralcontainers`` subresource, with
kube-apiserver 1.32's answers and (field, reason) causes.

Sources (kubernetes/kubernetes release-1.32):
- pkg/registry/core/pod/storage/storage.go, EphemeralContainersREST: GET answers the Pod,
  PUT and PATCH update it through EphemeralContainersStrategy (no create on update).
- pkg/registry/core/pod/strategy.go, podEphemeralContainersStrategy: PrepareForUpdate is
  dropNonEphemeralContainerUpdates (the stored spec but spec.ephemeralContainers, the stored
  status, metav1.ResetObjectMetaForStatus), ValidateUpdate is
  ValidatePodEphemeralContainersUpdate.
- pkg/apis/core/validation/validation.go: ValidatePodEphemeralContainersUpdate (existing
  ephemeral containers neither removed nor changed; static pods refused),
  validateEphemeralContainers (names unique across all containers, targetContainerName
  names a regular or init container, allowedEphemeralContainerFields, no subPath mounts),
  ValidatePodCreate (none on create) and ValidatePodUpdate (the pod's own update may change
  only updatablePodSpecFields).
- staging/src/k8s.io/kubectl/pkg/cmd/debug/debug.go, debugByEphemeralContainer: kubectl
  sends a strategic merge patch of spec.ephemeralContainers to the subresource.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.cluster.fidelity.builtin_server import MERGE, Kube

PODS = "/api/v1/namespaces/default/pods"
STRATEGIC = "application/strategic-merge-patch+json"
REQ, NOTFOUND, FORB, DUP = ("FieldValueRequired", "FieldValueNotFound", "FieldValueForbidden",
                            "FieldValueDuplicate")
EPHEMERAL_FIELD = "Forbidden: cannot be set for an Ephemeral Container"


def _create(kube: Kube, name: str, annotations: dict[str, str] | None = None) -> None:
    meta: dict[str, Any] = {"name": name, "labels": {"app": "x"}}
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"initContainers": [{"name": "init", "image": "i"}],
                            "containers": [{"name": "c", "image": "i"}]}
    if "kubernetes.io/config.mirror" in meta.get("annotations", {}):
        spec["nodeName"] = "node-1"  # (ValidatePodSpecificAnnotations: a mirror pod is bound)
    status, body = kube.call("POST", PODS, {"metadata": meta, "spec": spec})
    assert status == 201, body


def _debug_patch(**container: Any) -> dict[str, Any]:
    """The patch kubectl debug sends (CreateTwoWayMergePatch of the pod and the pod with
    the debug container): the new container in spec.ephemeralContainers."""
    return {"spec": {"ephemeralContainers": [{
        "name": "dbg", "image": "busybox", "command": ["sleep", "1"],
        "targetContainerName": "c", "resources": {}, "terminationMessagePolicy": "File",
        "imagePullPolicy": "Always", **container}]}}


def test_strategic_patch_adds_an_ephemeral_container(kube: Kube) -> None:
    _create(kube, "add")
    path = f"{PODS}/add/ephemeralcontainers"
    status, pod = kube.call("PATCH", path, _debug_patch(), STRATEGIC)
    assert status == 200, pod
    assert pod["kind"] == "Pod"
    [ec] = pod["spec"]["ephemeralContainers"]
    assert ec["name"] == "dbg" and ec["targetContainerName"] == "c"
    assert ec["command"] == ["sleep", "1"]
    assert ec["terminationMessagePath"] == "/dev/termination-log"  # defaulted as a container
    # GET of the subresource answers the pod
    status, got = kube.call("GET", path)
    assert status == 200 and got["kind"] == "Pod"
    assert got["spec"]["ephemeralContainers"] == pod["spec"]["ephemeralContainers"]
    # a second one is added beside it (merged by name; kubectl's $setElementOrder keeps
    # the order it wants)
    patch = _debug_patch(name="dbg2")
    patch["spec"]["$setElementOrder/ephemeralContainers"] = [{"name": "dbg"}, {"name": "dbg2"}]
    status, pod = kube.call("PATCH", path, patch, STRATEGIC)
    assert status == 200, pod
    assert [c["name"] for c in pod["spec"]["ephemeralContainers"]] == ["dbg", "dbg2"]


def test_only_ephemeral_containers_change(kube: Kube) -> None:
    """dropNonEphemeralContainerUpdates: the rest of the spec, the status and the metadata
    ResetObjectMetaForStatus resets (labels, annotations, finalizers...) are the stored
    ones, silently."""
    _create(kube, "only")
    status, pod = kube.call("PATCH", f"{PODS}/only/ephemeralcontainers", {
        "metadata": {"labels": {"app": "changed"}, "annotations": {"a": "b"},
                     "finalizers": ["example.com/f"]},
        "spec": {"activeDeadlineSeconds": 5, "ephemeralContainers": [
            {"name": "dbg", "image": "busybox"}]},
        "status": {"phase": "Failed"}}, MERGE)
    assert status == 200, pod
    assert pod["metadata"]["labels"] == {"app": "x"}
    assert "annotations" not in pod["metadata"] and "finalizers" not in pod["metadata"]
    assert "activeDeadlineSeconds" not in pod["spec"]
    assert pod["status"]["phase"] == "Pending"
    assert [c["name"] for c in pod["spec"]["ephemeralContainers"]] == ["dbg"]


def test_put_of_the_pod_adds_and_keeps(kube: Kube) -> None:
    _create(kube, "put")
    path = f"{PODS}/put/ephemeralcontainers"
    _, pod = kube.call("GET", path)
    pod["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "busybox"}]
    status, pod = kube.call("PUT", path, pod)
    assert status == 200, pod
    # removing it: ValidatePodEphemeralContainersUpdate
    pod["spec"]["ephemeralContainers"] = []
    status, answer = kube.call("PUT", path, pod)
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    assert [(c["field"], c["reason"], c["message"]) for c in answer["details"]["causes"]] == [
        ("spec.ephemeralContainers", FORB,
         'Forbidden: existing ephemeral containers "dbg" may not be removed\n')]


def test_existing_ephemeral_containers_are_immutable(kube: Kube) -> None:
    _create(kube, "immutable")
    path = f"{PODS}/immutable/ephemeralcontainers"
    assert kube.call("PATCH", path, _debug_patch(), STRATEGIC)[0] == 200
    got = kube.messages("PATCH", path, _debug_patch(image="alpine"), STRATEGIC)
    [message] = got["spec.ephemeralContainers"]
    assert message.startswith(
        'Forbidden: existing ephemeral containers "dbg" may not be changed\n'), message
    assert list(got) == ["spec.ephemeralContainers"]


def test_ephemeral_container_rules(kube: Kube) -> None:
    """validateEphemeralContainers: the allow-list, unique names, the target, subPath."""
    _create(kube, "rules")
    path = f"{PODS}/rules/ephemeralcontainers"
    p = "spec.ephemeralContainers"
    causes = kube.reject("PATCH", path, {"spec": {"ephemeralContainers": [
        {"name": "c", "image": "busybox", "ports": [{"containerPort": 80}],
         "resources": {"limits": {"cpu": "1"}},
         "lifecycle": {"preStop": {"exec": {"command": ["true"]}}},
         "readinessProbe": {"exec": {"command": ["true"]}}, "restartPolicy": "Always"},
        {"name": "init", "image": "", "targetContainerName": "nope"},
        {"name": "dbg", "image": "busybox", "targetContainerName": "init",
         "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x"}]},
        {"name": "dbg", "image": "busybox"}]}}, STRATEGIC)
    assert causes == Counter({
        (f"{p}[0].name", DUP): 1, (f"{p}[0].ports", FORB): 1, (f"{p}[0].resources", FORB): 1,
        (f"{p}[0].restartPolicy", FORB): 1, (f"{p}[0].readinessProbe", FORB): 1,
        (f"{p}[0].lifecycle", FORB): 1,
        (f"{p}[1].image", REQ): 1, (f"{p}[1].name", DUP): 1,
        (f"{p}[1].targetContainerName", NOTFOUND): 1,
        (f"{p}[2].volumeMounts[0].name", NOTFOUND): 1,
        (f"{p}[2].volumeMounts[0].subPath", FORB): 1,
        (f"{p}[3].name", DUP): 1})
    messages = kube.messages("PATCH", path, {"spec": {"ephemeralContainers": [
        {"name": "e", "image": "busybox", "ports": [{"containerPort": 80}]}]}}, STRATEGIC)
    assert messages == {f"{p}[0].ports": [EPHEMERAL_FIELD]}
    # nothing was written
    _, pod = kube.call("GET", path)
    assert "ephemeralContainers" not in pod["spec"]


def test_pod_create_and_update_refuse_ephemeral_containers(kube: Kube) -> None:
    """ValidatePodCreate forbids them on create; ValidatePodUpdate's munged-spec comparison
    refuses them through the pod itself."""
    status, answer = kube.call("POST", PODS, {"metadata": {"name": "create"}, "spec": {
        "containers": [{"name": "c", "image": "i"}],
        "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}})
    assert status == 422, answer
    assert [(c["field"], c["message"]) for c in answer["details"]["causes"]] == [
        ("spec.ephemeralContainers", "Forbidden: cannot be set on create")]
    _create(kube, "update")
    got = kube.messages("PATCH", f"{PODS}/update", {"spec": {"ephemeralContainers": [
        {"name": "dbg", "image": "busybox"}]}}, STRATEGIC)
    [message] = got["spec"]
    assert message.startswith("Forbidden: pod updates may not change fields other than "
                              "`spec.containers[*].image`,"), message


def test_missing_pod_and_static_pod(kube: Kube) -> None:
    status, answer = kube.call("PATCH", f"{PODS}/absent/ephemeralcontainers", _debug_patch(),
                               STRATEGIC)
    assert (status, answer["reason"]) == (404, "NotFound"), answer
    # kubectl tells a disabled feature (no name in the details) from a missing pod
    assert answer["details"] == {"name": "absent", "kind": "pods"}
    assert answer["message"] == 'pods "absent" not found'
    _create(kube, "static", {"kubernetes.io/config.mirror": "hash"})
    status, answer = kube.call("PATCH", f"{PODS}/static/ephemeralcontainers", _debug_patch(),
                               STRATEGIC)
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    # field.NewPath(""): a cause without a field (omitempty)
    assert answer["details"]["causes"] == [{
        "reason": FORB, "message": "Forbidden: static pods do not support ephemeral containers"}]
