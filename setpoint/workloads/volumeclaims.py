"""What the PV controller, the ephemeral volume controller and the scheduler all read of
PersistentVolumeClaims (k8s.io/component-helpers storage/volume, pkg/volume/util,
component-helpers storage/ephemeral): a pod's claims, a claim's class and binding mode,
whether it is fully bound, whether a generic ephemeral volume's claim is its pod's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from setpoint.machinery.objects import Obj

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


class StorageClasses(Protocol):
    def storage_class(self, name: str) -> Obj | None: ...


def claim_names(pod: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """The pod's claims in volume order, each with whether it is a generic ephemeral
    volume's (``ephemeral.VolumeClaimName``: ``<pod>-<volume>``)."""
    pod_name = str((pod.get("metadata") or {}).get("name") or "")
    names: list[tuple[str, bool]] = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if volume.get("persistentVolumeClaim") is not None:
            names.append((str(volume["persistentVolumeClaim"].get("claimName") or ""), False))
        elif volume.get("ephemeral") is not None:
            names.append((f"{pod_name}-{volume.get('name')}", True))
    return names


def claim_class(claim: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then the field."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def volume_class(pv: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClass``."""
    annotations = (pv.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str((pv.get("spec") or {}).get("storageClassName") or "")


def fully_bound(claim: Mapping[str, Any]) -> bool:
    """``isPVCFullyBound``: a volume named and the binding marked complete."""
    return bool((claim.get("spec") or {}).get("volumeName")) and \
        ANN_BIND_COMPLETED in ((claim.get("metadata") or {}).get("annotations") or {})


def delay_binding(claim: Mapping[str, Any], objects: StorageClasses) -> bool:
    """``IsDelayBindingMode``: the claim's class binds at the first consumer (a class that
    does not exist, or no class, binds at once)."""
    name = claim_class(claim)
    if not name:
        return False
    storage_class = objects.storage_class(name)
    return storage_class is not None and \
        storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"


def volume_is_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> str:
    """``ephemeral.VolumeIsForPod``: the claim's controller is the pod; else why not."""
    meta = pod.get("metadata") or {}
    cmeta = claim.get("metadata") or {}
    owner = next((r for r in cmeta.get("ownerReferences") or () if r.get("controller")),
                 None)
    if owner is None or owner.get("uid") != meta.get("uid"):
        return f"PVC {cmeta.get('namespace')}/{cmeta.get('name')} was not created for pod " \
               f"{meta.get('namespace')}/{meta.get('name')} (pod is not owner)"
    return ""


def claim_reference(claim: Mapping[str, Any]) -> Obj:
    """A volume's ``claimRef`` to ``claim`` (``reference.GetReference``)."""
    meta = claim.get("metadata") or {}
    return {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"),
            "name": meta.get("name"), "uid": meta.get("uid"), "apiVersion": "v1",
            "resourceVersion": meta.get("resourceVersion")}
