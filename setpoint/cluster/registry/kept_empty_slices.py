"""The empty pod-spec slices the decoding keeps for validation (``typeddecode.KEPT_WHEN_EMPTY``).

Go decodes ``"supplementalGroups": []`` into a non-nil empty slice, which validateWindows
refuses (``SupplementalGroups != nil``); yet encoding's omitempty never writes it back, and
the update rules compare with ``apiequality.Semantic.DeepEqual``, for which a nil and an
empty slice are equal (k8s.io/apimachinery third_party/forked/golang/reflect). So the list
is kept through validation of the new object, left out of comparisons with the old one,
and dropped by the strategy's Canonicalize before storage.
"""

from __future__ import annotations

import copy
from typing import Any

from setpoint.cluster.registry.pod_disabled_fields import pod_template_spec
from setpoint.machinery.objects import Obj


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def pod_spec_of(group: str, kind: str, obj: Obj) -> Any:
    """A pod's spec, or the spec of the kind's pod template (None for other kinds)."""
    return obj.get("spec") if (group, kind) == ("", "Pod") else pod_template_spec(
        group, kind, obj)


def omit_kept_empty_slices(spec: Any) -> bool:
    """Drop the kept empty lists from ``spec``; whether there was one."""
    context = _dict(_dict(spec).get("securityContext"))
    if context.get("supplementalGroups") == []:
        del context["supplementalGroups"]
        return True
    return False


def semantic(group: str, kind: str, obj: Obj) -> Obj:
    """``obj`` as Semantic.DeepEqual compares it: a copy without the kept empty lists (the
    object itself when it has none)."""
    spec = pod_spec_of(group, kind, obj)
    if _dict(_dict(spec).get("securityContext")).get("supplementalGroups") != []:
        return obj
    out = copy.deepcopy(obj)
    omit_kept_empty_slices(pod_spec_of(group, kind, out))
    return out
