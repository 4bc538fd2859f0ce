"""The pod fields whose feature gates are off in Kubernetes 1.32, dropped as the pod
strategy's PrepareForCreate and PrepareForUpdate drop them (``pkg/api/pod/util.go``:
dropDisabledFields, dropDisabledSupplementalGroupsPolicyField,
dropDisabledClusterTrustBundleProjection) before validation sees the pod: a field the old pod
already used is kept, so that an update does not lose it. The strategies of the kinds holding
a pod template drop them from it alike (DropDisabledTemplateFields).

- ``spec.hostUsers``: UserNamespacesSupport, beta but off by default until 1.33;
- ``spec.securityContext.supplementalGroupsPolicy``: SupplementalGroupsPolicy, alpha;
- a projected volume source's ``clusterTrustBundle``: ClusterTrustBundleProjection, alpha;
- a container status's ``allocatedResources``: InPlacePodVerticalScalingAllocatedStatus,
  alpha (dropDisabledPodStatusFields drops it whenever that gate is off, even if the old
  status had it; ``resources`` and ``status.resize`` stay, InPlacePodVerticalScaling being on).
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.objects import Obj


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _projected_sources(spec: Obj) -> list[dict[str, Any]]:
    volumes = spec.get("volumes")
    out: list[dict[str, Any]] = []
    for volume in volumes if isinstance(volumes, list) else []:
        sources = _dict(_dict(volume).get("projected")).get("sources")
        out.extend(s for s in (sources if isinstance(sources, list) else [])
                   if isinstance(s, dict))
    return out


def drop_disabled_pod_status_fields(status: Any) -> None:
    """``dropDisabledPodStatusFields``: no container status keeps ``allocatedResources``."""
    if not isinstance(status, dict):
        return
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        statuses = status.get(key)
        for cs in statuses if isinstance(statuses, list) else []:
            if isinstance(cs, dict):
                cs.pop("allocatedResources", None)


def drop_disabled_pod_spec_fields(spec: Any, old_spec: Any) -> None:
    """``dropDisabledFields`` for the gates above; ``old_spec`` is None on create."""
    if not isinstance(spec, dict):
        return
    old = _dict(old_spec)
    if old.get("hostUsers") is None:
        spec.pop("hostUsers", None)
    context = spec.get("securityContext")
    if isinstance(context, dict) and \
            _dict(old.get("securityContext")).get("supplementalGroupsPolicy") is None:
        context.pop("supplementalGroupsPolicy", None)
    if not any(s.get("clusterTrustBundle") is not None for s in _projected_sources(old)):
        for source in _projected_sources(spec):
            source.pop("clusterTrustBundle", None)


# Where each kind holding a pod template keeps it: each strategy's PrepareForCreate and
# PrepareForUpdate call ``pod.DropDisabledTemplateFields`` on it (pkg/registry/apps/
# {deployment,replicaset,statefulset,daemonset}, batch/{job,cronjob},
# core/{replicationcontroller,podtemplate} strategy.go).
POD_TEMPLATE_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
    ("", "ReplicationController"): ("spec", "template"),
    ("", "PodTemplate"): ("template",),
}


def _template_spec(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = _dict(obj).get(key)
    return _dict(obj).get("spec")


def pod_template_spec(group: str, kind: str, obj: Obj) -> Any:
    """The spec of the kind's pod template (None when the kind holds none)."""
    path = POD_TEMPLATE_PATHS.get((group, kind))
    return None if path is None else _template_spec(obj, path)


def drop_disabled_template_fields(group: str, kind: str, obj: Obj, old: Obj | None) -> None:
    """``DropDisabledTemplateFields`` on the kind's pod template; ``old`` is None on
    create."""
    path = POD_TEMPLATE_PATHS.get((group, kind))
    if path is not None:
        drop_disabled_pod_spec_fields(_template_spec(obj, path),
                                      None if old is None else _template_spec(old, path))
