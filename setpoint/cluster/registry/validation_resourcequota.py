"""ResourceQuota validation (kubernetes v1.32 pkg/apis/core/validation/validation.go:
ValidateResourceQuota, ValidateResourceQuotaSpec, ValidateResourceQuotaStatus,
validateResourceQuotaScopes, validateScopedResourceSelectorRequirement,
ValidateResourceQuotaUpdate, ValidateResourceQuotaResourceName, validateResourceName;
pkg/apis/core/helper/helpers.go: the standard resource, quota resource and scope sets).

Every quota resource name is a qualified name; one without a domain must also be one of the
standard names (two causes for an unknown bare name: not a standard resource, not a quota
resource). Scopes are fixed once created.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.registry.validation_nodes import validate_resource_quantity_value
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

_COMPUTE = ("cpu", "memory", "ephemeral-storage")
STANDARD_QUOTA_RESOURCES = frozenset((
    *_COMPUTE, "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
    "persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers"))
STANDARD_RESOURCES = STANDARD_QUOTA_RESOURCES | {"storage"}
SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity")
_EXISTS_ONLY = ("BestEffort", "NotBestEffort", "Terminating", "NotTerminating",
                "CrossNamespacePodAffinity")
_POD_COUNT = frozenset(("pods",))
_POD_COMPUTE = frozenset(("cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                          "requests.memory"))
_CONFLICTING = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
NOT_QUOTA = "must be a standard resource for quota"
EXISTS_ONLY = ("must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
               "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
               "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity")


def _hugepages(name: str) -> bool:
    """``IsQuotaHugePageResourceName``."""
    return name.startswith(("hugepages-", "requests.hugepages-"))


def validate_resource_name(name: str, path: str) -> list[Cause]:
    """``validateResourceName``: a qualified name; a bare one must be a standard resource."""
    causes = [fe.invalid(path, name, m) for m in names.is_qualified_name(name)]
    if causes:
        return causes
    if "/" not in name and name not in STANDARD_RESOURCES and not _hugepages(name):
        return [fe.invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def _quota_resource_name(name: str, path: str) -> list[Cause]:
    """``ValidateResourceQuotaResourceName``."""
    causes = validate_resource_name(name, path)
    if "/" not in name and name not in STANDARD_QUOTA_RESOURCES and not _hugepages(name):
        causes.append(fe.invalid(path, name, NOT_QUOTA))
    return causes


def _resource_list(values: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for name, value in (values or {}).items() if isinstance(values, dict) else ():
        p = fe.key(path, str(name))
        causes.extend(_quota_resource_name(str(name), p))
        causes.extend(validate_resource_quantity_value(str(name), value, p))
    return causes


def _valid_for(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"):
        return resource in _POD_COUNT or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource in _POD_COUNT
    return True


def _misapplied(scope: str, hard: list[str]) -> int:
    """How many standard hard resources the scope cannot apply to (one cause each)."""
    return sum(1 for k in hard if (k in STANDARD_QUOTA_RESOURCES or _hugepages(k))
               and not _valid_for(scope, k))


def _go_scopes(scopes: list[Any]) -> fe.GoValue:
    return fe.GoValue("[]core.ResourceQuotaScope{"
                      + ", ".join(fe.go_quote(str(s)) for s in scopes) + "}")


def _scopes(spec: Obj, hard: list[str]) -> list[Cause]:
    """``validateResourceQuotaScopes``."""
    scopes = spec.get("scopes") or []
    if not scopes:
        return []
    shown = _go_scopes(scopes)
    causes: list[Cause] = []
    for scope in scopes:
        if scope not in SCOPES:
            causes.append(fe.invalid("spec.scopes", shown, "unsupported scope"))
        causes.extend(fe.invalid("spec.scopes", shown, "unsupported scope applied to resource")
                      for _ in range(_misapplied(str(scope), hard)))
    causes.extend(fe.invalid("spec.scopes", shown, "conflicting scopes")
                  for pair in _CONFLICTING if set(pair) <= set(scopes))
    return causes


def _scope_selector(spec: Obj, hard: list[str]) -> list[Cause]:
    """``validateScopedResourceSelectorRequirement``."""
    selector = spec.get("scopeSelector")
    if not isinstance(selector, dict):
        return []
    path = "spec.scopeSelector.matchExpressions"
    seen: set[str] = set()
    causes: list[Cause] = []
    for req in selector.get("matchExpressions") or []:
        if not isinstance(req, dict):
            continue
        scope, operator = str(req.get("scopeName") or ""), str(req.get("operator") or "")
        values = req.get("values") or []
        if scope not in SCOPES:
            causes.append(fe.invalid(f"{path}.scopeName", scope, "unsupported scope"))
        causes.extend(fe.invalid(path, fe.GoValue("&core.ScopeSelector{...}"),
                                 "unsupported scope applied to resource")
                      for _ in range(_misapplied(scope, hard)))
        if scope in _EXISTS_ONLY and operator != "Exists":
            causes.append(fe.invalid(f"{path}.operator", operator, EXISTS_ONLY))
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(fe.required(f"{path}.values", "must be at least one value when "
                                          "`operator` is 'In' or 'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(fe.invalid(f"{path}.values", fe.go_string_slice(
                    [str(v) for v in values]), "must be no value when `operator` is 'Exist' or "
                    "'DoesNotExist' for scope selector"))
        else:
            causes.append(fe.invalid(f"{path}.operator", operator,
                                     "not a valid selector operator"))
        seen.add(scope)
    causes.extend(fe.invalid(path, _go_scopes(spec.get("scopes") or []), "conflicting scopes")
                  for pair in _CONFLICTING if set(pair) <= seen)
    return causes


def _spec(spec: Any) -> list[Cause]:
    """``ValidateResourceQuotaSpec``."""
    spec = spec if isinstance(spec, dict) else {}
    hard = spec.get("hard")
    hard_names = sorted(str(k) for k in hard) if isinstance(hard, dict) else []
    return (_resource_list(hard, "spec.hard") + _scopes(spec, hard_names)
            + _scope_selector(spec, hard_names))


def validate_resource_quota(obj: Obj) -> list[Cause]:
    """``ValidateResourceQuota`` past its metadata (the caller's): spec, then status."""
    raw = obj.get("status")
    status: Obj = raw if isinstance(raw, dict) else {}
    return (_spec(obj.get("spec")) + _resource_list(status.get("hard"), "status.hard")
            + _resource_list(status.get("used"), "status.used"))


def validate_resource_quota_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateResourceQuotaUpdate``'s own rule: the scopes (as a set) may not change."""
    new_scopes = (new.get("spec") or {}).get("scopes") or []
    old_scopes = (old.get("spec") or {}).get("scopes") or []
    if set(map(str, new_scopes)) != set(map(str, old_scopes)):
        shown = _go_scopes(new_scopes) if new_scopes else fe.GoValue(
            "[]core.ResourceQuotaScope(nil)")
        return [fe.invalid("spec.scopes", shown, "field is immutable")]
    return []
