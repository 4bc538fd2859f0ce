"""The warnings a new pod draws (kubernetes v1.32 pkg/registry/core/pod/strategy.go
``WarningsOnCreate``): the name check, then pkg/api/pod/warnings.go ``GetWarningsForPod``
(``warnings_podspec``). Pod updates draw none: the strategy skips them on a path that
controllers write often.
"""

from __future__ import annotations

from setpoint.cluster.registry.warnings_podspec import warnings_for_pod_spec_and_meta
from setpoint.machinery.gofmt import format_v
from setpoint.machinery.names import is_dns1123_label
from setpoint.machinery.objects import Obj


def pod_warnings_on_create(pod: Obj) -> list[str]:
    """podStrategy.WarningsOnCreate for a valid pod, in Go's order."""
    meta = pod.get("metadata") or {}
    warnings: list[str] = []
    if msgs := is_dns1123_label(meta.get("name") or ""):
        warnings.append("metadata.name: this is used in the Pod's hostname, which can result "
                        f"in surprising behavior; a DNS label is recommended: {format_v(msgs)}")
    return warnings + warnings_for_pod_spec_and_meta("", pod.get("spec") or {}, meta,
                                                     template=False)
