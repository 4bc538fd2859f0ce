"""TaintNodesByCondition: a Node is created tainted ``node.kubernetes.io/not-ready:NoSchedule``.

A port of plugin/pkg/admission/nodetaint (mutating, CREATE of nodes only, not subresources):
so that no pod is scheduled to a node before the node lifecycle controller has seen it Ready
and lifted the taint. A node that already has a taint of that key and effect is left as sent
(``Taint.MatchTaint`` compares key and effect only).
"""

from __future__ import annotations

from setpoint.cluster.registry.admissionpoints import Attributes

NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def taint_nodes_by_condition(attributes: Attributes) -> None:
    """Append the not-ready NoSchedule taint to a created Node."""
    rt = attributes.rt
    if (attributes.operation != "CREATE" or attributes.subresource or rt.group
            or rt.resource != "nodes"):
        return
    spec = attributes.obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    taints = spec.get("taints") or []
    if any(isinstance(t, dict) and t.get("key") == NOT_READY_TAINT
           and t.get("effect") == "NoSchedule" for t in taints):
        return
    spec["taints"] = [*taints, {"key": NOT_READY_TAINT, "effect": "NoSchedule"}]
