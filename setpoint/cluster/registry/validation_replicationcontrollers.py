"""ReplicationController validation (kubernetes v1.32 pkg/apis/core/validation/validation.go:
ValidateReplicationController, ValidateReplicationControllerSpec, ValidatePodTemplateSpecForRC;
the same spec rules on update).

The selector is a plain label map, defaulted from the template's labels, and must select them;
the template's pods always restart and have no deadline. (ValidateReadOnlyPersistentDisks is
skipped as 1.32 skips it: SkipReadOnlyValidationGCE is on.)
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_pods import validate_pod_template
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

NON_NEGATIVE = "must be greater than or equal to 0"


def _non_negative(spec: Obj, key: str) -> list[Cause]:
    """``ValidateNonnegativeField``."""
    value = spec.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [fe.invalid(f"spec.{key}", value, NON_NEGATIVE)]
    return []


def _template(template: Any, selector: dict[str, Any]) -> list[Cause]:
    """``ValidatePodTemplateSpecForRC``."""
    path = "spec.template"
    if not isinstance(template, dict):
        return [fe.required(path)]
    causes: list[Cause] = []
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        causes.append(fe.invalid(f"{path}.metadata.labels",
                                 fe.go_string_map({str(k): str(v) for k, v in labels.items()}),
                                 "`selector` does not match template `labels`"))
    causes.extend(validate_pod_template(template, path))
    raw = template.get("spec")
    spec: Obj = raw if isinstance(raw, dict) else {}
    policy = spec.get("restartPolicy") or ""
    if policy != "Always":
        causes.append(fe.not_supported(f"{path}.spec.restartPolicy", policy, ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        causes.append(fe.forbidden(f"{path}.spec.activeDeadlineSeconds",
                                   "activeDeadlineSeconds in ReplicationController is not "
                                   "Supported"))
    return causes


def validate_replication_controller(obj: Obj) -> list[Cause]:
    """``ValidateReplicationControllerSpec`` (metadata is the caller's)."""
    raw = obj.get("spec")
    spec: Obj = raw if isinstance(raw, dict) else {}
    selector = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
    causes = _non_negative(spec, "minReadySeconds")
    if not selector:
        causes.append(fe.required("spec.selector"))
    causes.extend(_non_negative(spec, "replicas"))
    return causes + _template(spec.get("template"), selector or {})
