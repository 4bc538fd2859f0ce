"""The warnings a new pod draws (pkg/registry/core/pod/strategy.go ``WarningsOnCreate``).

The name check, then pkg/api/pod/warnings.go ``GetWarningsForPod``'s metadata warnings: the
deprecated annotations and the pod seccomp annotation without its field. (Its spec warnings,
deprecated node labels, volume plugins, duplicate entries and fractional quantities, are
not drawn yet.)
"""

from __future__ import annotations

from setpoint.machinery.names import is_dns1123_label
from setpoint.machinery.objects import Obj

# warnings.go deprecatedAnnotations: (key, message), in its order
DEPRECATED_ANNOTATIONS = (
    ("scheduler.alpha.kubernetes.io/critical-pod",
     'non-functional in v1.16+; use the "priorityClassName" field instead'),
    ("security.alpha.kubernetes.io/sysctls",
     'non-functional in v1.11+; use the "sysctls" field instead'),
    ("security.alpha.kubernetes.io/unsafe-sysctls",
     'non-functional in v1.11+; use the "sysctls" field instead'),
)
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"  # api.SeccompPodAnnotationKey


def pod_warnings_on_create(pod: Obj) -> list[str]:
    """podStrategy.WarningsOnCreate for a valid pod, in Go's order."""
    meta = pod.get("metadata") or {}
    warnings: list[str] = []
    if msgs := is_dns1123_label(meta.get("name") or ""):
        warnings.append("metadata.name: this is used in the Pod's hostname, which can result "
                        f"in surprising behavior; a DNS label is recommended: {_go_list(msgs)}")
    annotations = meta.get("annotations") or {}
    for key, message in DEPRECATED_ANNOTATIONS:
        if key in annotations:
            warnings.append(f"metadata.annotations[{key}]: {message}")
    security = (pod.get("spec") or {}).get("securityContext") or {}
    if not security.get("seccompProfile") and SECCOMP_POD_ANNOTATION in annotations:
        warnings.append(f"metadata.annotations[{SECCOMP_POD_ANNOTATION}]: non-functional in "
                        'v1.27+; use the "seccompProfile" field instead')
    return warnings


def _go_list(items: list[str]) -> str:
    """A []string as fmt's %v writes it."""
    return "[" + " ".join(items) + "]"
