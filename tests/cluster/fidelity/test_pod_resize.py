"""In-place pod resize over HTTP: the ``pods/resize`` subresource as kube-apiserver 1.32
serves it with InPlacePodVerticalScaling on (the recorded discovery lists ``pods/resize``,
which pkg/registry/core/rest/storage_core.go registers only with that gate).

Sources (kubernetes/kubernetes release-1.32):
- pkg/registry/core/pod/storage/storage.go, ResizeREST: GET answers the Pod, PUT and PATCH
  update it through ResizeStrategy.
- pkg/registry/core/pod/strategy.go, podResizeStrategy.PrepareForUpdate:
  dropNonResizeUpdates (the stored pod but each regular container's ``resources`` and
  ``resizePolicy``), MarkPodProposedForResize (pkg/api/pod/util.go: ``status.resize:
  Proposed`` when a container's resources change); ValidateUpdate is ValidatePodResize.
- pkg/apis/core/validation/validation.go, ValidatePodResize: static and windows pods are
  refused alone; the QoS class may not change; requests and limits may not be removed;
  only cpu and memory may change (the rest of the spec is compared with the stored one).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.fidelity.builtin_server import MERGE, Kube

PODS = "/api/v1/namespaces/default/pods"
STRATEGIC = "application/strategic-merge-patch+json"


def _create(kube: Kube, name: str, resources: dict[str, Any] | None = None,
            annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app": "x"}}
    if annotations:
        meta["annotations"] = annotations
    container: dict[str, Any] = {"name": "c", "image": "i"}
    if resources is not None:
        container["resources"] = resources
    status, body = kube.call("POST", PODS, {"metadata": meta,
                                            "spec": {"containers": [container], **spec}})
    assert status == 201, body
    return dict(body)


def _resources(**lists: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "resources": lists}]}}


BURSTABLE = {"requests": {"cpu": "100m", "memory": "64Mi"},
             "limits": {"cpu": "200m", "memory": "128Mi"}}


def test_get_answers_the_pod(kube: Kube) -> None:
    created = _create(kube, "get-me", BURSTABLE)
    status, body = kube.call("GET", f"{PODS}/get-me/resize")
    assert status == 200, body
    assert body["kind"] == "Pod" and body["metadata"]["uid"] == created["metadata"]["uid"]
    status, body = kube.call("GET", f"{PODS}/nobody/resize")
    assert (status, body["reason"]) == (404, "NotFound")


def test_patch_changes_resources_only_and_proposes_the_resize(kube: Kube) -> None:
    """dropNonResizeUpdates keeps the stored pod but the containers' resources and resize
    policy; MarkPodProposedForResize sets ``status.resize: Proposed``."""
    created = _create(kube, "grow", BURSTABLE)
    patch = {"metadata": {"labels": {"app": "changed"}},
             "spec": {"activeDeadlineSeconds": 5, "containers": [{
                 "name": "c", "image": "other",
                 "resources": {"requests": {"cpu": "150m"}},
                 "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}]}}
    status, body = kube.call("PATCH", f"{PODS}/grow/resize", patch, STRATEGIC)
    assert status == 200, body
    [c] = body["spec"]["containers"]
    assert c["resources"]["requests"] == {"cpu": "150m", "memory": "64Mi"}
    assert c["resources"]["limits"] == BURSTABLE["limits"]
    assert c["resizePolicy"] == [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    assert c["image"] == "i"  # everything else is the stored pod's
    assert "activeDeadlineSeconds" not in body["spec"]
    assert body["metadata"]["labels"] == {"app": "x"}
    assert body["status"]["resize"] == "Proposed"
    assert body["status"]["qosClass"] == created["status"]["qosClass"] == "Burstable"
    # a write that changes no resources proposes nothing new (the status is the stored one)
    status, again = kube.call("GET", f"{PODS}/grow")
    assert status == 200, again
    assert again["spec"]["containers"][0]["resources"] == c["resources"]


def test_unchanged_resources_propose_nothing(kube: Kube) -> None:
    _create(kube, "same", BURSTABLE)
    status, body = kube.call("PATCH", f"{PODS}/same/resize",
                             {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert status == 200, body
    assert "resize" not in body["status"]


def test_qos_class_may_not_change(kube: Kube) -> None:
    """A Guaranteed pod given requests below its limits would become Burstable."""
    _create(kube, "guaranteed", {"limits": {"cpu": "100m", "memory": "64Mi"}})
    messages = kube.messages("PATCH", f"{PODS}/guaranteed/resize",
                             _resources(requests={"cpu": "50m"}), STRATEGIC)
    assert messages == {"spec": ["Invalid value: \"Guaranteed\": Pod QOS Class may not change "
                                 "as a result of resizing"]}


def test_best_effort_may_not_gain_requests(kube: Kube) -> None:
    _create(kube, "besteffort")
    causes = kube.reject("PATCH", f"{PODS}/besteffort/resize",
                         _resources(requests={"cpu": "50m"}), STRATEGIC)
    assert causes == {("spec", "FieldValueInvalid"): 1}


def test_requests_and_limits_may_not_be_removed(kube: Kube) -> None:
    _create(kube, "keep", BURSTABLE)
    body = {"spec": {"containers": [{"name": "c", "image": "i", "resources": {
        "requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}}]}}
    status, pod = kube.call("GET", f"{PODS}/keep")
    assert status == 200, pod
    pod["spec"]["containers"][0]["resources"] = body["spec"]["containers"][0]["resources"]
    messages = kube.messages("PUT", f"{PODS}/keep/resize", pod)
    assert messages == {
        "spec.containers[0].resources.requests": ["Forbidden: resource requests cannot be "
                                                  "removed"],
        "spec.containers[0].resources.limits": ["Forbidden: resource limits cannot be "
                                                "removed"]}


def test_only_cpu_and_memory_may_change(kube: Kube) -> None:
    _create(kube, "storage", {"requests": {"cpu": "100m", "ephemeral-storage": "1Gi"}})
    status, answer = kube.call("PATCH", f"{PODS}/storage/resize",
                               _resources(requests={"ephemeral-storage": "2Gi"}), STRATEGIC)
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    [cause] = answer["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec", "FieldValueForbidden")
    assert cause["message"].startswith("Forbidden: only cpu and memory resources are mutable")


def test_static_pods_cannot_be_resized(kube: Kube) -> None:
    _create(kube, "static", BURSTABLE, annotations={"kubernetes.io/config.mirror": "x"},
            nodeName="node-1")
    status, answer = kube.call("PATCH", f"{PODS}/static/resize",
                               _resources(requests={"cpu": "150m"}), STRATEGIC)
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    # field.NewPath(""): a cause without a field (omitempty), and no other cause
    assert answer["details"]["causes"] == [{
        "reason": "FieldValueForbidden", "message": "Forbidden: static pods cannot be resized"}]


def test_windows_pods_cannot_be_resized(kube: Kube) -> None:
    _create(kube, "windows", BURSTABLE, os={"name": "windows"})
    status, answer = kube.call("PATCH", f"{PODS}/windows/resize",
                               _resources(requests={"cpu": "150m"}), STRATEGIC)
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    assert answer["details"]["causes"] == [{
        "reason": "FieldValueForbidden", "message": "Forbidden: windows pods cannot be resized"}]


def test_resize_policy_values_are_validated(kube: Kube) -> None:
    """The new pod is validated whole (validatePodMetadataAndSpec's validateResizePolicy)."""
    _create(kube, "policy", BURSTABLE)
    patch = {"spec": {"containers": [{"name": "c", "resizePolicy": [
        {"resourceName": "cpu", "restartPolicy": "Sometimes"}]}]}}
    messages = kube.messages("PATCH", f"{PODS}/policy/resize", patch, STRATEGIC)
    assert messages == {"spec.containers[0].resizePolicy": [
        'Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer"']}


def test_a_pod_that_never_restarts_needs_not_required(kube: Kube) -> None:
    """validateResizePolicy: RestartContainer is refused when ``restartPolicy`` is Never."""
    causes = kube.reject("POST", PODS, {"metadata": {"name": "never"}, "spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "i", "resizePolicy": [
            {"resourceName": "memory", "restartPolicy": "RestartContainer"},
            {"resourceName": "memory", "restartPolicy": "NotRequired"}]}]}})
    assert causes == {("spec.containers[0].resizePolicy", "FieldValueInvalid"): 1,
                      ("spec.containers[0].resizePolicy[1]", "FieldValueDuplicate"): 1}


def test_the_pod_update_still_refuses_resources(kube: Kube) -> None:
    """Only the subresource resizes: the pod's own update keeps ValidatePodUpdate's rule."""
    _create(kube, "plain", BURSTABLE)
    status, answer = kube.call("PATCH", f"{PODS}/plain",
                               _resources(requests={"cpu": "150m"}), STRATEGIC)
    assert (status, answer["reason"]) == (422, "Invalid"), answer


def test_a_status_write_keeps_resources_and_resize_but_not_allocated_resources(
        kube: Kube) -> None:
    """pkg/api/pod/util.go dropDisabledPodStatusFields (v1.32, through
    podStatusStrategy.PrepareForUpdate): with InPlacePodVerticalScaling on, a container
    status's ``resources`` and ``status.resize`` are kept; ``allocatedResources`` needs
    InPlacePodVerticalScalingAllocatedStatus (alpha, off) and is dropped, as the 1.32
    kubelet does not write it either."""
    _create(kube, "allocated", BURSTABLE)
    status, pod = kube.call("GET", f"{PODS}/allocated")
    assert status == 200, pod
    applied = {"requests": {"cpu": "100m", "memory": "64Mi"},
               "limits": {"cpu": "200m", "memory": "128Mi"}}
    pod["status"]["resize"] = "InProgress"
    pod["status"]["containerStatuses"] = [{
        "name": "c", "image": "i", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"waiting": {"reason": "ContainerCreating"}},
        "allocatedResources": {"cpu": "100m", "memory": "64Mi"}, "resources": applied}]
    status, body = kube.call("PUT", f"{PODS}/allocated/status", pod)
    assert status == 200, body
    [cs] = body["status"]["containerStatuses"]
    assert "allocatedResources" not in cs
    assert cs["resources"] == applied
    assert body["status"]["resize"] == "InProgress"
