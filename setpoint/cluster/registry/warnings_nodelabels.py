"""Warnings about deprecated node labels in the selectors of a StorageClass, a
CSIStorageCapacity and a RuntimeClass, on create and on update (kubernetes v1.32
pkg/api/storage/util.go GetWarningsForStorageClass, GetWarningsForCSIStorageCapacity;
pkg/api/node/util.go GetWarningsForRuntimeClass, GetWarningsForNodeSelector)."""

from __future__ import annotations

from setpoint.cluster.registry.warnings_podspec import DEPRECATED_NODE_LABELS
from setpoint.machinery.objects import Obj


def storage_class_warnings(sc: Obj) -> list[str]:
    warnings = []
    for i, term in enumerate(sc.get("allowedTopologies") or []):
        for j, expression in enumerate((term or {}).get("matchLabelExpressions") or []):
            msg = DEPRECATED_NODE_LABELS.get(str((expression or {}).get("key")))
            if msg is not None:
                warnings.append(f"allowedTopologies[{i}].matchLabelExpressions[{j}].key: {msg}")
    return warnings


def csi_storage_capacity_warnings(capacity: Obj) -> list[str]:
    """GetWarningsForNodeSelector on nodeTopology (its matchLabels in key order: Go ranges
    over the map in random order)."""
    selector = capacity.get("nodeTopology")
    if not isinstance(selector, dict):
        return []
    warnings = []
    for i, expression in enumerate(selector.get("matchExpressions") or []):
        key = str((expression or {}).get("key"))
        msg = DEPRECATED_NODE_LABELS.get(key)
        if msg is not None:
            warnings.append(f"nodeTopology.matchExpressions[{i}].key: {key} is {msg}")
    for label in sorted(selector.get("matchLabels") or {}):
        msg = DEPRECATED_NODE_LABELS.get(label)
        if msg is not None:
            warnings.append(f"nodeTopology.matchLabels.{label}: {msg}")
    return warnings


def runtime_class_warnings(rc: Obj) -> list[str]:
    node_selector = (rc.get("scheduling") or {}).get("nodeSelector") or {}
    return [f"scheduling.nodeSelector: {DEPRECATED_NODE_LABELS[key]}"
            for key in sorted(node_selector) if key in DEPRECATED_NODE_LABELS]


NODE_LABEL_WARNINGS = {
    ("storage.k8s.io", "StorageClass"): storage_class_warnings,
    ("storage.k8s.io", "CSIStorageCapacity"): csi_storage_capacity_warnings,
    ("node.k8s.io", "RuntimeClass"): runtime_class_warnings,
}
