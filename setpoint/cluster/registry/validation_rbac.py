"""Validation of RBAC roles and bindings (pkg/apis/rbac/validation/validation.go, 1.32).

Metadata (the path-segment name rule) is validated by the caller like every kind's; this
module adds what ``ValidateRole``, ``ValidateClusterRole``, ``ValidateRoleBinding`` and
``ValidateClusterRoleBinding`` check beyond it: the rules' shape, a ClusterRole's
aggregationRule, the binding's roleRef and subjects, and that an update keeps the roleRef.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

GROUP = "rbac.authorization.k8s.io"


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _policy_rule(rule: Any, namespaced: bool, path: str) -> list[Cause]:
    """``validatePolicyRule``."""
    rule = rule if isinstance(rule, dict) else {}
    causes: list[Cause] = []
    if not rule.get("verbs"):
        causes.append(fe.required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = _strings(rule.get("nonResourceURLs"))
    if urls:
        shown = fe.go_string_slice(urls)
        if namespaced:
            causes.append(fe.invalid(f"{path}.nonResourceURLs", shown,
                                     "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            causes.append(fe.invalid(
                f"{path}.nonResourceURLs", shown,
                "rules cannot apply to both regular resources and non-resource URLs"))
        return causes
    if not rule.get("apiGroups"):
        causes.append(fe.required(f"{path}.apiGroups",
                                  "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        causes.append(fe.required(f"{path}.resources",
                                  "resource rules must supply at least one resource"))
    if rule.get("resourceNames") and len(rule.get("resources") or []) > 1:
        causes.append(fe.required(f"{path}.resourceNames",
                                  "resource names cannot apply to multiple resources"))
    return causes


def _rules(obj: Obj, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(obj.get("rules") or []):
        causes.extend(_policy_rule(rule, namespaced, f"rules[{i}]"))
    return causes


def validate_role(obj: Obj) -> list[Cause]:
    """``ValidateRole`` (less its ObjectMeta check)."""
    return _rules(obj, True)


def _aggregation_rule(obj: Obj, allow_invalid_label_values: bool) -> list[Cause]:
    rule = obj.get("aggregationRule")
    if not isinstance(rule, dict):
        return []
    path = "aggregationRule.clusterRoleSelectors"
    selectors = rule.get("clusterRoleSelectors") or []
    causes: list[Cause] = []
    if not selectors:
        causes.append(fe.required(
            path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
    for i, selector in enumerate(selectors):
        selector = selector if isinstance(selector, dict) else {}
        causes.extend(labels.validate_label_selector(selector, f"{path}[{i}]",
                                                     allow_invalid_label_values))
        try:
            labels.from_label_selector(selector)
        except (labels.SelectorError, ValueError):
            # LabelSelectorAsSelector failed: the (nil) selector it returned prints as null
            causes.append(fe.invalid(f"{path}[{i}]", "null", "invalid label selector."))
    return causes


def validate_cluster_role(obj: Obj, allow_invalid_label_values: bool = False) -> list[Cause]:
    """``ValidateClusterRole`` (less its ObjectMeta check): rules may name non-resource
    URLs; the aggregationRule needs at least one valid selector."""
    return _rules(obj, False) + _aggregation_rule(obj, allow_invalid_label_values)


def _subject(subject: Any, namespaced: bool, path: str) -> list[Cause]:
    """``validateRoleBindingSubject``."""
    subject = subject if isinstance(subject, dict) else {}
    name, kind, group = (_text(subject.get("name")), _text(subject.get("kind")),
                         _text(subject.get("apiGroup")))
    causes: list[Cause] = []
    if not name:
        causes.append(fe.required(f"{path}.name"))
    if kind == "ServiceAccount":
        if name:
            # ValidateServiceAccountName is NameIsDNSSubdomain
            causes.extend(fe.invalid(f"{path}.name", name, m)
                          for m in names.name_is_dns_subdomain(name, False))
        if group:
            causes.append(fe.not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not _text(subject.get("namespace")):
            causes.append(fe.required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if not name:
            causes.append(fe.invalid(f"{path}.name", name,
                                     f"{kind.lower()} name cannot be empty"))
        if group != GROUP:
            causes.append(fe.not_supported(f"{path}.apiGroup", group, [GROUP]))
    else:
        causes.append(fe.not_supported(f"{path}.kind", kind,
                                       ["ServiceAccount", "User", "Group"]))
    return causes


def _binding(obj: Obj, namespaced: bool) -> list[Cause]:
    raw = obj.get("roleRef")
    ref: dict[str, Any] = raw if isinstance(raw, dict) else {}
    causes: list[Cause] = []
    group = _text(ref.get("apiGroup"))
    if group != GROUP:
        causes.append(fe.not_supported("roleRef.apiGroup", group, [GROUP]))
    kind = _text(ref.get("kind"))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if kind not in kinds:
        causes.append(fe.not_supported("roleRef.kind", kind, kinds))
    name = _text(ref.get("name"))
    if not name:
        causes.append(fe.required("roleRef.name"))
    else:
        causes.extend(fe.invalid("roleRef.name", name, m)
                      for m in names.validate_path_segment_name(name, False))
    for i, subject in enumerate(obj.get("subjects") or []):
        causes.extend(_subject(subject, namespaced, f"subjects[{i}]"))
    return causes


def validate_role_binding(obj: Obj) -> list[Cause]:
    """``ValidateRoleBinding`` (less its ObjectMeta check)."""
    return _binding(obj, True)


def validate_cluster_role_binding(obj: Obj) -> list[Cause]:
    """``ValidateClusterRoleBinding`` (less its ObjectMeta check)."""
    return _binding(obj, False)


def _go_role_ref(ref: Any) -> fe.GoValue:
    """``%#v`` of the internal ``rbac.RoleRef``."""
    ref = ref if isinstance(ref, dict) else {}
    return fe.GoValue("rbac.RoleRef{" + ", ".join(
        f"{go}:{fe.go_quote(_text(ref.get(key)))}"
        for key, go in (("apiGroup", "APIGroup"), ("kind", "Kind"), ("name", "Name"))) + "}")


def _ref_key(ref: Any) -> tuple[str, str, str]:
    ref = ref if isinstance(ref, dict) else {}
    return (_text(ref.get("apiGroup")), _text(ref.get("kind")), _text(ref.get("name")))


def validate_binding_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateRoleBindingUpdate`` / ``ValidateClusterRoleBindingUpdate``: a binding's
    roleRef never changes (delete and recreate the binding instead)."""
    if _ref_key(new.get("roleRef")) == _ref_key(old.get("roleRef")):
        return []
    return [fe.invalid("roleRef", _go_role_ref(new.get("roleRef")), "cannot change roleRef")]
