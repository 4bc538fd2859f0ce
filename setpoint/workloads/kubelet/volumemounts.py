"""Whether a pod's volumes can be set up, as the kubelet's volume manager finds out before it
starts a pod's containers (pkg/kubelet/volumemanager; the configmap, secret and projected
plugins' ``SetUpAt``; the desired-state populator's claim checks).

A ConfigMap or Secret that does not exist (and is not ``optional``), or lacks a key its
``items`` name, fails the mount: each failed attempt is a ``FailedMount`` warning in the
operation generator's words (``MountVolume.SetUp failed for volume "cfg" : configmap
"app" not found``), retried with its exponential backoff (500 ms doubling to 2 m 2 s). A
claim that is missing, being deleted or not Bound, or whose volume is missing, keeps the
pod waiting without an event (the populator records the error on the pod only). The
containers start once every volume is set up; a volume set up stays so."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from setpoint.client import Kind
from setpoint.machinery.objects import Obj

CONFIGMAP = Kind("v1", "ConfigMap")
SECRET = Kind("v1", "Secret")
PVC = Kind("v1", "PersistentVolumeClaim")
PV = Kind("v1", "PersistentVolume")

# pkg/volume/util/nestedpendingoperations: exponentialbackoff's initial and maximum waits
INITIAL_RETRY_S = 0.5
MAX_RETRY_S = 122.0

Lookup = Callable[[Kind, str, str | None], Obj | None]


def retry_after(attempts: int) -> float:
    """The wait before mount attempt ``attempts + 1``."""
    return min(INITIAL_RETRY_S * 2.0 ** max(attempts - 1, 0), MAX_RETRY_S)


def _keys(obj: Mapping[str, Any]) -> set[str]:
    return set(obj.get("data") or ()) | set(obj.get("binaryData") or ())


def _configmap_error(source: Mapping[str, Any], namespace: str, lookup: Lookup) -> str:
    """configmap.go ``SetUpAt`` and ``MakePayload``."""
    name = str(source.get("name") or "")
    optional = bool(source.get("optional"))
    configmap = lookup(CONFIGMAP, name, namespace)
    if configmap is None:
        return "" if optional else f'configmap "{name}" not found'
    keys = _keys(configmap)
    for item in source.get("items") or ():
        if item.get("key") not in keys and not optional:
            return f"configmap references non-existent config key: {item.get('key')}"
    return ""


def _secret_error(source: Mapping[str, Any], name_field: str, namespace: str,
                  lookup: Lookup) -> str:
    """secret.go ``SetUpAt`` and ``MakePayload``."""
    name = str(source.get(name_field) or "")
    optional = bool(source.get("optional"))
    secret = lookup(SECRET, name, namespace)
    if secret is None:
        return "" if optional else f'secret "{name}" not found'
    keys = set(secret.get("data") or ())
    for item in source.get("items") or ():
        if item.get("key") not in keys and not optional:
            return f"references non-existent secret key: {item.get('key')}"
    return ""


def _projected_error(volume: Mapping[str, Any], namespace: str, lookup: Lookup) -> str:
    """projected.go ``collectData``: every source's error, aggregated
    (``utilerrors.NewAggregate``: one alone, several in brackets)."""
    errors = []
    for source in (volume.get("projected") or {}).get("sources") or ():
        if source.get("configMap") is not None:
            error = _configmap_error(source["configMap"], namespace, lookup)
        elif source.get("secret") is not None:
            error = _secret_error(source["secret"], "name", namespace, lookup)
        else:
            continue
        if error:
            errors.append(error)
    if len(errors) > 1:
        return "[" + ", ".join(errors) + "]"
    return errors[0] if errors else ""


def _claim_ready(claim_name: str, namespace: str, lookup: Lookup) -> bool:
    """The populator's ``getPVCExtractPV`` and ``getPVSpec``: a Bound claim, not being
    deleted, whose volume exists."""
    claim = lookup(PVC, claim_name, namespace)
    if claim is None or (claim.get("metadata") or {}).get("deletionTimestamp") \
            or (claim.get("status") or {}).get("phase") != "Bound":
        return False
    volume_name = (claim.get("spec") or {}).get("volumeName")
    return bool(volume_name) and lookup(PV, str(volume_name), None) is not None


def mount_failures(pod: Mapping[str, Any], lookup: Lookup) -> tuple[list[str], bool]:
    """What one attempt to set the pod's volumes up finds: the ``FailedMount`` messages,
    and whether the pod must wait (those, or a claim not ready)."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    failures: list[str] = []
    waiting = False
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        name = volume.get("name")
        if volume.get("configMap") is not None:
            error = _configmap_error(volume["configMap"], namespace, lookup)
        elif volume.get("secret") is not None:
            error = _secret_error(volume["secret"], "secretName", namespace, lookup)
        elif volume.get("projected") is not None:
            error = _projected_error(volume, namespace, lookup)
        elif volume.get("persistentVolumeClaim") is not None:
            claim = str(volume["persistentVolumeClaim"].get("claimName") or "")
            waiting |= not _claim_ready(claim, namespace, lookup)
            continue
        elif volume.get("ephemeral") is not None:
            waiting |= not _claim_ready(f"{meta.get('name')}-{name}", namespace, lookup)
            continue
        else:
            continue
        if error:
            failures.append(f'MountVolume.SetUp failed for volume "{name}" : {error}')
    return failures, waiting or bool(failures)
