"""``/status`` writes of built-in kinds (Pods and Nodes foremost; Services, Namespaces,
claims and the apps workloads): what each may change, what it silently keeps, and what it
refuses, with the causes kube-apiserver 1.32 gives.

Sources: pkg/registry/core/pod/strategy.go (podStatusStrategy: PrepareForUpdate keeps the
spec, ownerReferences and the QoS class; ValidateUpdate is ValidatePodStatusUpdate),
pkg/registry/core/node/strategy.go (nodeStatusStrategy: PrepareForUpdate keeps the spec;
ValidateUpdate is ValidateNodeUpdate; nodeStrategy.Validate is ValidateNode),
pkg/apis/core/validation/validation.go (ValidatePodStatusUpdate, validatePodIPs,
validateHostIPs, ValidateContainerStateTransition, ValidateNode, ValidateNodeUpdate,
ValidateNodeResources, ValidateResourceQuantityValue), pkg/apis/core/v1/conversion.go
(podIP and podIPs), staging/src/k8s.io/apiserver/pkg/registry/rest/update.go
(validateCommonFields runs before the strategy's ValidateUpdate).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.cluster.conftest import API

PODS = "/api/v1/namespaces/default/pods"
NODES = "/api/v1/nodes"
MERGE = "application/merge-patch+json"


def _causes(body: dict[str, Any]) -> Counter[tuple[str, str]]:
    return Counter((c["field"], c["reason"]) for c in body["details"]["causes"])


def _messages(body: dict[str, Any]) -> dict[str, str]:
    return {c["field"]: c["message"] for c in body["details"]["causes"]}


async def _pod(api: API, name: str, **spec: Any) -> dict[str, Any]:
    status, pod = await api.post(PODS, {"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "i"}], **spec}})
    assert status == 201, pod
    return dict(pod)


async def test_pod_status_write_is_validated_by_the_status_rules_alone(api: API) -> None:
    """A pod status write runs ValidatePodStatusUpdate, not the pod's validation: a bad
    label is reported by the generic layer twice (validateCommonFields) and once by
    ValidatePodStatusUpdate's ValidateObjectMetaUpdate — where a write through the main
    resource adds ValidatePodUpdate's ValidateObjectMeta, a fourth. Container statuses that
    name no container, negative restart counts, unknown phases and condition statuses pass:
    nothing validates them (the source's note under ValidatePodStatusUpdate)."""
    await _pod(api, "p")
    bad = {"metadata": {"labels": {"a b": "x"}}}
    status, body = await api.patch(f"{PODS}/p/status", bad, MERGE)
    assert (status, body["reason"], _causes(body)) == (
        422, "Invalid", Counter({("metadata.labels", "FieldValueInvalid"): 3}))
    status, body = await api.patch(f"{PODS}/p", bad, MERGE)
    assert (status, _causes(body)) == (
        422, Counter({("metadata.labels", "FieldValueInvalid"): 4}))
    status, body = await api.patch(f"{PODS}/p/status", {
        "metadata": {"labels": {"written": "by-status"}},
        "spec": {"containers": [{"name": "c", "image": "changed"}]},
        "status": {"phase": "Imaginary", "conditions": [{"type": "Ready", "status": "Maybe"}],
                   "containerStatuses": [{"name": "not-in-spec", "restartCount": -4,
                                          "ready": False, "image": "", "imageID": "",
                                          "state": {}}]}}, MERGE)
    assert status == 200, body
    assert (body["metadata"]["labels"], body["spec"]["containers"][0]["image"],
            body["status"]["phase"], body["status"]["containerStatuses"][0]["restartCount"]
            ) == ({"written": "by-status"}, "i", "Imaginary", -4)


async def test_pod_status_qos_class_is_fixed_at_creation(api: API) -> None:
    """status.qosClass may not change (ValidateImmutableField, 'field is immutable'); a
    write that leaves it out keeps the stored one (podStatusStrategy.PrepareForUpdate
    backfills it for kubelets that dropped it)."""
    pod = await _pod(api, "q")
    assert pod["status"]["qosClass"] == "BestEffort"
    status, body = await api.patch(f"{PODS}/q/status",
                                   {"status": {"qosClass": "Guaranteed"}}, MERGE)
    assert (status, body.get("reason")) == (422, "Invalid")
    assert _messages(body) == {
        "status.qosClass": 'Invalid value: "Guaranteed": field is immutable'}
    assert body["message"] == ('Pod "q" is invalid: status.qosClass: Invalid value: '
                               '"Guaranteed": field is immutable')
    status, current = await api.get(f"{PODS}/q")
    sent = {**current, "status": {"phase": "Running"}}
    status, body = await api.put(f"{PODS}/q/status", sent)
    assert (status, body["status"]) == (200, {"phase": "Running", "qosClass": "BestEffort"})


async def test_pod_status_terminated_containers_stay_terminated(api: API) -> None:
    """Under restartPolicy Never a terminated container may not become running again (the
    cause indexes the old status); under OnFailure a failed one may, a succeeded one may
    not; init containers follow the pod's policy (ValidateContainerStateTransition,
    ValidateInitContainerStateTransition)."""
    def statuses(key: str, state: dict[str, Any], name: str = "c") -> dict[str, Any]:
        return {"status": {key: [{"name": name, "ready": False, "restartCount": 0,
                                  "image": "i", "imageID": "", "state": state}]}}

    done: dict[str, Any] = {"terminated": {"exitCode": 0}}
    failed: dict[str, Any] = {"terminated": {"exitCode": 1}}
    running: dict[str, Any] = {"running": {}}
    await _pod(api, "never", restartPolicy="Never",
               initContainers=[{"name": "init", "image": "i"}])
    for key, name in (("containerStatuses", "c"), ("initContainerStatuses", "init")):
        status, body = await api.patch(f"{PODS}/never/status", statuses(key, done, name),
                                       MERGE)
        assert status == 200, body
        status, body = await api.patch(f"{PODS}/never/status", statuses(key, running, name),
                                       MERGE)
        assert (status, _messages(body)) == (422, {
            f"status.{key}[0].state": "Forbidden: may not be transitioned to non-terminated "
                                      "state"})
    await _pod(api, "onfailure", restartPolicy="OnFailure")
    for first, code in ((failed, 200), (done, 200), (running, 422)):
        status, body = await api.patch(f"{PODS}/onfailure/status",
                                       statuses("containerStatuses", first), MERGE)
        assert status == code, body
    await _pod(api, "always")
    for state in (done, running):
        status, _ = await api.patch(f"{PODS}/always/status",
                                    statuses("containerStatuses", state), MERGE)
        assert status == 200


async def test_pod_status_ips_are_checked_and_pod_ip_is_authoritative(api: API) -> None:
    """status.podIPs and status.hostIPs must be IPs, at most one per family, without
    repeats; hostIPs[0] must equal hostIP (validatePodIPs, validateHostIPs). podIP is
    authoritative: written alone it fills podIPs, and podIPs that disagree with it are
    replaced by it (Convert_v1_PodStatus_To_core_PodStatus); podIPs alone give podIP."""
    await _pod(api, "ips")
    status, body = await api.patch(f"{PODS}/ips/status", {"status": {
        "podIPs": [{"ip": "not-an-ip"}],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.2"}]}}, MERGE)
    assert status == 422, body
    assert _causes(body) == Counter({
        ("status.podIPs[0]", "FieldValueInvalid"): 1,
        ("status.hostIPs[0].ip", "FieldValueInvalid"): 1,
        ("status.hostIPs[1]", "FieldValueDuplicate"): 1,
        ("status.hostIPs", "FieldValueInvalid"): 1})
    assert _messages(body)["status.podIPs[0]"] == (
        'Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or '
        '2001:db8::ffff)')
    assert _messages(body)["status.hostIPs[0].ip"] == (
        'Invalid value: "10.0.0.2": must be equal to `hostIP`')
    status, body = await api.patch(f"{PODS}/ips/status", {"status": {
        "podIPs": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}]}}, MERGE)
    assert (status, _causes(body)) == (422, Counter({("status.podIPs", "FieldValueInvalid"): 1}))
    status, body = await api.patch(f"{PODS}/ips/status", {"status": {
        "podIPs": [{"ip": "10.1.0.1"}, {"ip": "fd00::1"}],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}]}}, MERGE)
    assert status == 200, body
    assert body["status"]["podIP"] == "10.1.0.1"
    status, body = await api.patch(f"{PODS}/ips/status", {"status": {"podIP": "10.1.0.9"}},
                                   MERGE)
    assert (status, body["status"]["podIP"], body["status"]["podIPs"]) == (
        200, "10.1.0.9", [{"ip": "10.1.0.9"}])


def _node(name: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": status}


async def test_node_quantities_and_addresses_are_validated_on_status_writes(api: API) -> None:
    """A node status write runs ValidateNodeUpdate: capacity and allocatable quantities may
    not be negative, counted resources (pods, extended resources) must be whole, and no
    address may repeat. Address types and conditions are not validated. Creating a node
    runs ValidateNode, which checks the quantities of the status it may carry (allocatable
    defaulted from capacity: SetDefaults_NodeStatus in pkg/apis/core/v1/defaults.go)."""
    negative = 'Invalid value: "-2": must be greater than or equal to 0'
    status, body = await api.post(NODES, _node("bad", capacity={"cpu": "-2"}))
    assert (status, _messages(body)) == (422, {
        "status.capacity.cpu": negative, "status.allocatable.cpu": negative})
    status, body = await api.post(NODES, _node("n", capacity={"cpu": "4", "pods": "110"}))
    assert status == 201, body
    status, body = await api.patch(f"{NODES}/n/status", {"status": {
        "capacity": {"cpu": "-1", "pods": "1500m", "example.com/gpu": "1"},
        "allocatable": {"memory": "-1Gi", "example.com/gpu": "500m"},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                      {"type": "InternalIP", "address": "10.0.0.1"}]}}, MERGE)
    assert (status, body["reason"], body["details"]["kind"]) == (422, "Invalid", "Node")
    assert _causes(body) == Counter({
        ("status.capacity.cpu", "FieldValueInvalid"): 1,
        ("status.capacity.pods", "FieldValueInvalid"): 1,
        ("status.allocatable.memory", "FieldValueInvalid"): 1,
        ("status.allocatable.example.com/gpu", "FieldValueInvalid"): 1,
        ("status.addresses[1]", "FieldValueDuplicate"): 1})
    messages = _messages(body)
    assert messages["status.allocatable.memory"] == (
        'Invalid value: "-1Gi": must be greater than or equal to 0')
    assert messages["status.capacity.pods"].endswith(": must be an integer")
    assert messages["status.addresses[1]"] == (
        'Duplicate value: core.NodeAddress{Type:"InternalIP", Address:"10.0.0.1"}')
    status, body = await api.patch(f"{NODES}/n/status", {
        "metadata": {"labels": {"kept": "yes"}}, "spec": {"unschedulable": True},
        "status": {"addresses": [{"type": "Bogus", "address": "anything"}],
                   "conditions": [{"type": "Whatever", "status": "Perhaps"}]}}, MERGE)
    assert status == 200, body
    assert (body["metadata"]["labels"], body["spec"].get("unschedulable"),
            body["status"]["conditions"][0]["status"]) == ({"kept": "yes"}, None, "Perhaps")


async def test_status_writes_of_services_namespaces_and_claims_skip_the_kind_validation(
        api: API) -> None:
    """Service, Namespace and PersistentVolumeClaim status strategies validate a status
    write with ValidateServiceStatusUpdate, ValidateNamespaceStatusUpdate and
    ValidatePersistentVolumeClaimStatusUpdate alone: a bad label is reported three times
    (validateCommonFields twice, their ValidateObjectMetaUpdate once), not four as through
    the main resource. A claim's capacity may not be negative, judged on its whole value
    (validateBasicResource, key path status.capacity[storage]). Sources:
    pkg/registry/core/{service,namespace,persistentvolumeclaim}/strategy.go."""
    claims = "/api/v1/namespaces/default/persistentvolumeclaims"
    writes: tuple[tuple[str, dict[str, Any]], ...] = (
            ("/api/v1/namespaces/default/services",
             {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
            ("/api/v1/namespaces", {"metadata": {"name": "ns1"}}),
            (claims, {"metadata": {"name": "c"}, "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}))
    for path, body in writes:
        status, created = await api.post(path, body)
        assert status == 201, created
        at = f"{path}/{body['metadata']['name']}"
        status, out = await api.patch(f"{at}/status",
                                      {"metadata": {"labels": {"a b": "x"}}}, MERGE)
        assert (status, _causes(out)) == (
            422, Counter({("metadata.labels", "FieldValueInvalid"): 3})), at
        status, out = await api.patch(at, {"metadata": {"labels": {"a b": "x"}}}, MERGE)
        assert (status, _causes(out)) == (
            422, Counter({("metadata.labels", "FieldValueInvalid"): 4})), at
    status, out = await api.patch(f"{claims}/c/status", {"status": {
        "phase": "Bound", "capacity": {"storage": "-1Gi"}}}, MERGE)
    assert (status, out["details"]["kind"], _messages(out)) == (
        422, "PersistentVolumeClaim", {"status.capacity[storage]":
                                       "Invalid value: -1073741824: must be a valid resource "
                                       "quantity"})
    status, out = await api.patch(f"{claims}/c/status", {"status": {
        "phase": "Bound", "capacity": {"storage": "2Gi"}}}, MERGE)
    assert (status, out["status"]["capacity"]) == (200, {"storage": "2Gi"})


async def test_node_spec_rules_on_create_and_update(api: API) -> None:
    """ValidateNode: taints are validated under the metadata path the real code hands
    validateNodeTaints (metadata.taints[i]), pod CIDRs must be CIDRs; ValidateNodeUpdate:
    podCIDRs and providerID may only be set once. podCIDR is authoritative over podCIDRs
    (Convert_v1_NodeSpec_To_core_NodeSpec). A status write cannot touch the spec, so none
    of this can fail it."""
    status, body = await api.post(NODES, {"metadata": {"name": "t"}, "spec": {
        "taints": [{"key": "k", "effect": "Sometimes"}, {"key": "k", "effect": "NoSchedule"},
                   {"key": "k", "effect": "NoSchedule", "value": "v"}],
        "podCIDRs": ["10.244.0.0/33"]}})
    assert (status, _causes(body)) == (422, Counter({
        ("metadata.taints[0].effect", "FieldValueNotSupported"): 1,
        ("metadata.taints[2]", "FieldValueDuplicate"): 1,
        ("spec.podCIDRs[0]", "FieldValueInvalid"): 1}))
    assert _messages(body)["metadata.taints[0].effect"] == (
        'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", '
        '"NoExecute"')
    status, node = await api.post(NODES, {"metadata": {"name": "c"}, "spec": {
        "podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.9.0/24"], "providerID": "sim://c"}})
    assert (status, node["spec"]["podCIDRs"]) == (201, ["10.244.1.0/24"])
    status, body = await api.patch(f"{NODES}/c", {"spec": {
        "podCIDR": "10.244.2.0/24", "providerID": "sim://other"}}, MERGE)
    assert (status, _causes(body)) == (422, Counter({
        ("spec.podCIDRs", "FieldValueForbidden"): 1,
        ("spec.providerID", "FieldValueForbidden"): 1}))
    status, body = await api.patch(f"{NODES}/c/status", {"spec": {"providerID": "sim://x"},
                                                          "status": {"phase": "Running"}},
                                   MERGE)
    assert (status, body["spec"]["providerID"]) == (200, "sim://c")


async def test_workload_status_writes_are_validated_by_the_status_rules_alone(
        api: API) -> None:
    """The apps status strategies validate a status write with ValidateDeploymentStatusUpdate
    (and its ReplicaSet, StatefulSet, DaemonSet kin) alone: a bad annotation is reported
    three times, not four (labels are not the status writer's: the strategy keeps the
    stored ones); the collision count may not be decremented nor dropped once set
    (apivalidation.IsDecremented; the value reported is 0 when it is dropped). Sources:
    pkg/apis/apps/validation/validation.go, pkg/registry/apps/deployment/strategy.go."""
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    status, _ = await api.post(deployments, {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "x"}},
        "template": {"metadata": {"labels": {"app": "x"}},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    assert status == 201
    status, out = await api.patch(f"{deployments}/d/status",
                                  {"metadata": {"annotations": {"a b": "x"}}}, MERGE)
    assert (status, _causes(out)) == (
        422, Counter({("metadata.annotations", "FieldValueInvalid"): 3}))
    status, out = await api.patch(f"{deployments}/d/status",
                                  {"status": {"collisionCount": 2}}, MERGE)
    assert status == 200, out
    for sent, shown in ((1, "1"), (None, "0")):
        status, out = await api.patch(f"{deployments}/d/status",
                                      {"status": {"collisionCount": sent}}, MERGE)
        assert (status, _messages(out)) == (422, {
            "status.collisionCount": f"Invalid value: {shown}: cannot be decremented"})
