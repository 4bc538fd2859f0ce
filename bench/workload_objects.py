"""The objects the workloads benchmark writes: Deployments, and for the floor the Nodes,
Pods, Bindings and Running statuses a perfect scheduler and kubelet would write."""

from __future__ import annotations

import time
from typing import Any

Obj = dict[str, Any]

NS = "bench"
REPLICAS = 10
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
