"""The objects the workloads benchmark writes: Deployments, and for the floor the Nodes,
Pods, Bindings and Running statuses a perfect scheduler and kubelet would write."""

from __future__ import annotations

import time
from typing import Any

Obj = dict[str, Any]

NS = "bench"
REPLICAS = 10
# the Nodes: one per 100 pods unless --nodes says otherwise (workloads.main sets it before
# a run, so readers take it as objects.NODES at the time of use)
NODES = 10
IMAGE = "registry.k8s.io/pause:3.9"
# small enough that 110 pods fit a default node (4 CPU, 16Gi): the pod count binds first
REQUESTS = {"cpu": "10m", "memory": "16Mi"}
EXACT_TIMING = "sim.setpoint.dev/exact-timing"


def deployment_name(i: int) -> str:
    return f"d-{i:03d}"


def pod_template(app: str, grace: int, version: str, exact_timing: bool = False) -> Obj:
    """The pod template of every Deployment (and the floor's pods): one container whose
    ``VERSION`` variable the rollout changes. With ``exact_timing`` the simulated kubelet
    holds a deleted pod for its whole grace period instead of its cap (2 s by default)."""
    metadata: Obj = {"labels": {"app": app}}
    if exact_timing:
        metadata["annotations"] = {EXACT_TIMING: "true"}
    return {
        "metadata": metadata,
        "spec": {
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "app", "image": IMAGE,
                            "env": [{"name": "VERSION", "value": version}],
                            "resources": {"requests": dict(REQUESTS)}}],
        },
    }


def deployment(i: int, grace: int, exact_timing: bool = False) -> Obj:
    """Deployment ``i``: 10 replicas, the default RollingUpdate strategy (25% surge and
    unavailable: 3 and 2 of 10)."""
    name = deployment_name(i)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": name}},
                     "template": pod_template(name, grace, "1", exact_timing)}}


def template_patch(version: str) -> Obj:
    """A strategic merge patch that changes the template's ``VERSION`` (a rollout)."""
    return {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "VERSION", "value": version}]}]}}}}


def version_of(pod: Obj) -> str:
    """The ``VERSION`` a pod was created with."""
    for container in (pod.get("spec") or {}).get("containers") or ():
        for env in container.get("env") or ():
            if env.get("name") == "VERSION":
                return str(env.get("value"))
    return ""


# -- the floor's writes ------------------------------------------------------------------------
def node(i: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i + 1}",
                         "labels": {"kubernetes.io/hostname": f"node-{i + 1}",
                                    "kubernetes.io/os": "linux"}}}


def node_status(i: int) -> Obj:
    """A merge patch of ``nodes/status``: capacity as ``cluster up`` gives it, and Ready."""
    now = _now()
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {"status": {
        "capacity": resources, "allocatable": resources,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "addresses": [{"type": "InternalIP", "address": f"127.0.1.{i + 1}"}]}}


def floor_pod(i: int, grace: int, version: str) -> Obj:
    """Pod ``i`` of the floor: the template a ReplicaSet would stamp, named directly."""
    app = deployment_name(i // REPLICAS)
    template = pod_template(app, grace, version)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{app}-v{version}-{i % REPLICAS}", "namespace": NS,
                         "labels": template["metadata"]["labels"]},
            "spec": template["spec"]}


def binding(name: str, node_name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "namespace": NS},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}


def running_status(i: int, node_index: int) -> Obj:
    """A merge patch of ``pods/status`` with what the kubelet reports for a started,
    ready pod: phase, the five conditions, IPs and a complete container status."""
    now = _now()
    host_ip = f"127.0.1.{node_index + 1}"
    pod_ip = f"10.{node_index}.{i // 250}.{i % 250 + 2}"
    conditions = [{"type": t, "status": "True", "lastTransitionTime": now}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                            "ContainersReady", "PodScheduled")]
    return {"status": {
        "phase": "Running", "conditions": conditions,
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": now,
        "containerStatuses": [{
            "name": "app", "state": {"running": {"startedAt": now}}, "lastState": {},
            "ready": True, "restartCount": 0, "image": IMAGE, "imageID": IMAGE,
            "started": True, "containerID": f"containerd://{i:064x}"}]}}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- the faithful floor's writes (bench/workload_faithful.py) ----------------------------------
def now() -> str:
    return _now()


def _owner(owner: Obj) -> Obj:
    """The controller reference a controller stamps on what it creates
    (metav1.NewControllerRef)."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def replica_set(deployment: Obj, version: str, replicas: int) -> Obj:
    """The ReplicaSet the Deployment controller creates for ``deployment``'s template
    (sync.go getNewReplicaSet): named by the template's hash, labelled and selecting by it."""
    name = deployment["metadata"]["name"]
    template_hash = f"5d{version}f8c7b9"  # a stand-in for ComputeHash of the template
    template = deployment["spec"]["template"]
    labels = {**template["metadata"]["labels"], "pod-template-hash": template_hash}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{name}-{template_hash}", "namespace": NS, "labels": labels,
                         "annotations": {"deployment.kubernetes.io/desired-replicas": "10",
                                         "deployment.kubernetes.io/max-replicas": "13",
                                         "deployment.kubernetes.io/revision": version},
                         "ownerReferences": [_owner(deployment)]},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": {**deployment["spec"]["selector"]
                                                  ["matchLabels"],
                                                  "pod-template-hash": template_hash}},
                     "template": {**template, "metadata": {**template["metadata"],
                                                           "labels": labels}}}}


def owned_pod(rs: Obj) -> Obj:
    """A pod as the ReplicaSet controller creates it from ``rs``'s template
    (controller_utils.go GetPodFromTemplate)."""
    template = rs["spec"]["template"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": f"{rs['metadata']['name']}-", "namespace": NS,
                         "labels": dict(template["metadata"]["labels"]),
                         "ownerReferences": [_owner(rs)]},
            "spec": template["spec"]}


def scheduled_event(pod: Obj, node_name: str) -> Obj:
    """kube-scheduler's events.k8s.io/v1 ``Scheduled`` event (schedule_one.go)."""
    meta = pod["metadata"]
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": NS},
            "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
            "reportingController": "default-scheduler", "reportingInstance":
                "default-scheduler-setpoint", "action": "Binding", "reason": "Scheduled",
            "type": "Normal",
            "note": f"Successfully assigned {NS}/{meta['name']} to {node_name}",
            "regarding": {"kind": "Pod", "namespace": NS, "name": meta["name"],
                          "uid": meta["uid"], "apiVersion": "v1",
                          "resourceVersion": meta["resourceVersion"]}}


def available(ok: bool) -> Obj:
    """The Deployment's Available condition (deployment/util ``MinimumReplicas*``)."""
    now = _now()
    return {"type": "Available", "status": "True" if ok else "False",
            "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability." if ok
            else "Deployment does not have minimum availability."}


def progressing(reason: str) -> Obj:
    """The Deployment's Progressing condition with ``reason`` (deployment/util)."""
    now = _now()
    return {"type": "Progressing", "status": "True", "lastUpdateTime": now,
            "lastTransitionTime": now, "reason": reason, "message": f"{reason}."}
