"""The AppArmor version skew a new pod goes through (kubernetes v1.32
pkg/registry/core/pod/strategy.go ``applyAppArmorVersionSkew``, called by PrepareForCreate).

A container's profile lives in two places: the deprecated annotation
``container.apparmor.security.beta.kubernetes.io/<container>`` and ``appArmorProfile`` in the
container's (or the pod's) security context. On create the server brings them in step so that
a kubelet of either age enforces it: a field without the annotation gets the annotation; an
annotation without the container field gets the field, unless the annotation's profile is
the pod's own or cannot be expressed as a valid field. Either way an annotation without a field
draws the deprecation warning, here rather than among the strategy's create warnings because
those see the pod after the sync. Windows pods are left alone.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.podcontainers import visit_containers_with_path
from setpoint.machinery.objects import Obj

ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
UNCONFINED = "unconfined"
RUNTIME_DEFAULT = "runtime/default"
LOCALHOST_PREFIX = "localhost/"
MAX_LOCALHOST_PROFILE = 4095  # PATH_MAX - 1 (ValidateAppArmorProfileField)
DEPRECATED = 'deprecated since v1.30; use the "appArmorProfile" field instead'


def _annotation_for_field(profile: Obj) -> str:
    """``appArmorAnnotationForField``: "" for a Localhost profile without a name or an
    unknown type."""
    kind = profile.get("type")
    if kind == "Unconfined":
        return UNCONFINED
    if kind == "RuntimeDefault":
        return RUNTIME_DEFAULT
    if kind == "Localhost" and isinstance(profile.get("localhostProfile"), str):
        return LOCALHOST_PREFIX + str(profile["localhostProfile"])
    return ""


def _field_for_annotation(annotation: str) -> Obj | None:
    """``apparmorFieldForAnnotation``, then ``ValidateAppArmorProfileField``: the field, or
    None for an unknown value or a Localhost name that would be invalid (padded with
    whitespace, empty, or longer than PATH_MAX - 1)."""
    if annotation == UNCONFINED:
        return {"type": "Unconfined"}
    if annotation == RUNTIME_DEFAULT:
        return {"type": "RuntimeDefault"}
    if annotation.startswith(LOCALHOST_PREFIX):
        name = annotation[len(LOCALHOST_PREFIX):]
        if name and name == name.strip() and len(name.encode()) <= MAX_LOCALHOST_PROFILE:
            return {"type": "Localhost", "localhostProfile": name}
    return None


def linux_pod_profile(pod: Obj) -> tuple[Obj, Any] | None:
    """The pod's spec and its pod-level ``appArmorProfile`` (None when unset), or None for a
    pod the AppArmor rules pass over: one without a spec, or a Windows pod."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return None
    os_ = spec.get("os")
    if isinstance(os_, dict) and os_.get("name") == "windows":
        return None
    context = spec.get("securityContext")
    return spec, context.get("appArmorProfile") if isinstance(context, dict) else None


def apply_apparmor_version_skew(pod: Obj) -> list[str]:
    """Sync the pod's AppArmor annotations and fields in place; the warnings it draws."""
    linux = linux_pod_profile(pod)
    if linux is None:
        return []
    spec, pod_profile = linux
    meta = pod.setdefault("metadata", {})
    warnings: list[str] = []
    for container, _ in visit_containers_with_path(spec, "spec"):
        key = ANNOTATION_PREFIX + str(container.get("name") or "")
        annotations = meta.get("annotations") or {}
        context = container.get("securityContext")
        profile = context.get("appArmorProfile") if isinstance(context, dict) else None
        if key not in annotations:
            source = profile if isinstance(profile, dict) else pod_profile
            value = _annotation_for_field(source) if isinstance(source, dict) else ""
            if value:
                if not isinstance(meta.get("annotations"), dict):
                    meta["annotations"] = {}
                meta["annotations"][key] = value
            continue
        if profile is not None:
            continue
        derived = _field_for_annotation(str(annotations[key]))
        # (an annotation that gives no valid field, or one copied to a field, warns; one
        # that only repeats the pod's profile does not)
        if derived is not None and derived != pod_profile:
            if not isinstance(context, dict):
                container["securityContext"] = context = {}
            context["appArmorProfile"] = derived
        if derived is None or derived != pod_profile:
            warnings.append(f"metadata.annotations[{key}]: {DEPRECATED}")
    return warnings
