"""The fields each kind can be selected by (``fieldSelector``), as Kubernetes defines them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType


def _get(obj: Obj, *path: str) -> str:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _pod(obj: Obj) -> dict[str, str]:
    return {
        "spec.nodeName": _get(obj, "spec", "nodeName"),
        "spec.restartPolicy": _get(obj, "spec", "restartPolicy"),
        "spec.schedulerName": _get(obj, "spec", "schedulerName"),
        "spec.serviceAccountName": _get(obj, "spec", "serviceAccountName"),
        "spec.hostNetwork": _get(obj, "spec", "hostNetwork") or "false",
        "status.phase": _get(obj, "status", "phase"),
        "status.podIP": _get(obj, "status", "podIP"),
        "status.nominatedNodeName": _get(obj, "status", "nominatedNodeName"),
    }


def _event(obj: Obj) -> dict[str, str]:
    io = "involvedObject"
    return {
        f"{io}.kind": _get(obj, io, "kind"),
        f"{io}.namespace": _get(obj, io, "namespace"),
        f"{io}.name": _get(obj, io, "name"),
        f"{io}.uid": _get(obj, io, "uid"),
        f"{io}.apiVersion": _get(obj, io, "apiVersion"),
        f"{io}.resourceVersion": _get(obj, io, "resourceVersion"),
        f"{io}.fieldPath": _get(obj, io, "fieldPath"),
        "reason": _get(obj, "reason"),
        "reportingComponent": _get(obj, "reportingComponent"),
        "source": _get(obj, "source", "component"),
        "type": _get(obj, "type"),
    }


def _events_v1(obj: Obj) -> dict[str, str]:
    r = "regarding"
    return {
        f"{r}.kind": _get(obj, r, "kind"),
        f"{r}.namespace": _get(obj, r, "namespace"),
        f"{r}.name": _get(obj, r, "name"),
        f"{r}.uid": _get(obj, r, "uid"),
        f"{r}.apiVersion": _get(obj, r, "apiVersion"),
        f"{r}.resourceVersion": _get(obj, r, "resourceVersion"),
        f"{r}.fieldPath": _get(obj, r, "fieldPath"),
        "reason": _get(obj, "reason"),
        "reportingController": _get(obj, "reportingController"),
        "type": _get(obj, "type"),
    }


FIELD_LABELS: dict[tuple[str, str], Callable[[Obj], dict[str, str]]] = {
    ("", "Pod"): _pod,
    ("", "Event"): _event,
    ("events.k8s.io", "Event"): _events_v1,
    ("", "Secret"): lambda o: {"type": _get(o, "type")},
    ("", "Namespace"): lambda o: {"status.phase": _get(o, "status", "phase")},
    ("", "Node"): lambda o: {"spec.unschedulable": _get(o, "spec", "unschedulable") or "false"},
    ("", "ReplicationController"): lambda o: {"status.replicas": _get(o, "status", "replicas")},
    ("apps", "ReplicaSet"): lambda o: {"status.replicas": _get(o, "status", "replicas")},
    ("batch", "Job"): lambda o: {"status.successful": _get(o, "status", "succeeded")},
    ("", "PersistentVolumeClaim"): lambda o: {},
    ("certificates.k8s.io", "CertificateSigningRequest"): lambda o: {
        "spec.signerName": _get(o, "spec", "signerName")},
}


def field_labels(rt: ResourceType, obj: Obj) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    labels = {"metadata.name": meta.get("name", "")}
    if rt.namespaced:
        labels["metadata.namespace"] = meta.get("namespace", "")
    fn = FIELD_LABELS.get((rt.group, rt.kind))
    if fn is not None:
        labels.update(fn(obj))
    if rt.is_custom:
        for sf in ((rt.crd or {}).get("spec", {}).get("versions") or []):
            if sf.get("name") == rt.version:
                for sel in sf.get("selectableFields") or []:
                    path = sel["jsonPath"].lstrip(".")
                    labels[path] = _get(obj, *path.split("."))
    return labels


def supported(rt: ResourceType) -> set[str]:
    """The field selector keys a resource accepts (others are a 400)."""
    return set(field_labels(rt, {"metadata": {}}))
