"""Where a pod may run (``pkg/apis/core/validation``: ValidateTolerations, validateAffinity,
ValidateNodeSelector and its terms, validatePodAffinityTerm, validateTopologySpreadConstraints'
basics, validateOnlyAddedTolerations for updates).

1.32 default: a required node affinity's values must be label values
(AllowInvalidLabelValueInRequiredNodeAffinity only keeps old pods valid); preferred terms may
hold any value.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.errors import Cause

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
WEIGHT_RANGE = "must be in the range 1-100"


def _label_name(key: str, path: str) -> list[Cause]:
    """``ValidateLabelName``."""
    return [fe.invalid(path, key, m) for m in names.is_qualified_name(key)]


def validate_tolerations(tolerations: Any, path: str) -> list[Cause]:
    """``ValidateTolerations``."""
    causes: list[Cause] = []
    for i, t in enumerate(tolerations or []):
        if not isinstance(t, dict):
            continue
        p = f"{path}[{i}]"
        key, operator = t.get("key") or "", t.get("operator") or ""
        value, effect = t.get("value") or "", t.get("effect") or ""
        if key:
            causes.extend(_label_name(key, f"{p}.key"))
        if not key and operator != "Exists":
            causes.append(fe.invalid(f"{p}.operator", operator,
                                     "operator must be Exists when `key` is empty, which means "
                                     "\"match all values and all keys\""))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(fe.invalid(f"{p}.effect", effect,
                                     "effect must be 'NoExecute' when `tolerationSeconds` is "
                                     "set"))
        if operator in ("Equal", ""):
            errs = names.is_valid_label_value(value)
            if errs:
                causes.append(fe.invalid(f"{p}.operator", value, ";".join(errs)))
        elif operator == "Exists":
            if value:
                causes.append(fe.invalid(f"{p}.operator", value,
                                         "value must be empty when `operator` is 'Exists'"))
        else:
            causes.append(fe.not_supported(f"{p}.operator", operator, TOLERATION_OPERATORS))
        if effect and effect not in TAINT_EFFECTS:
            causes.append(fe.not_supported(f"{p}.effect", effect, TAINT_EFFECTS))
    return causes


def validate_only_added_tolerations(new: Any, old: Any, path: str) -> list[Cause]:
    """``validateOnlyAddedTolerations``: each old toleration is still there (its
    tolerationSeconds may change)."""
    new_list = [t for t in new or [] if isinstance(t, dict)]
    for old_t in old or []:
        if not isinstance(old_t, dict):
            continue
        plain = {k: v for k, v in old_t.items() if k != "tolerationSeconds"}
        if not any({k: v for k, v in t.items() if k != "tolerationSeconds"} == plain
                   for t in new_list):
            return [fe.forbidden(path, "existing toleration can not be modified except its "
                                       "tolerationSeconds")]
    return validate_tolerations(new, path)


def _node_requirement(req: dict[str, Any], path: str, check_values: bool) -> list[Cause]:
    """``ValidateNodeSelectorRequirement``."""
    causes: list[Cause] = []
    operator = req.get("operator") or ""
    values = req.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            causes.append(fe.required(f"{path}.values",
                                      "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            causes.append(fe.forbidden(f"{path}.values", "may not be specified when `operator` "
                                                         "is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            causes.append(fe.required(f"{path}.values", "must be specified single value when "
                                                        "`operator` is 'Lt' or 'Gt'"))
    else:
        causes.append(fe.invalid(f"{path}.operator", operator, "not a valid selector operator"))
    causes.extend(_label_name(req.get("key") or "", f"{path}.key"))
    if check_values:
        for j, v in enumerate(values):
            causes.extend(fe.invalid(f"{path}.values[{j}]", v, m)
                          for m in names.is_valid_label_value(str(v)))
    return causes


def _field_requirement(req: dict[str, Any], path: str) -> list[Cause]:
    """``ValidateNodeFieldSelectorRequirement``: only ``metadata.name In/NotIn <one>``."""
    causes: list[Cause] = []
    operator = req.get("operator") or ""
    values = req.get("values") or []
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            causes.append(fe.required(f"{path}.values", "must be only one value when "
                                                        "`operator` is 'In' or 'NotIn' for node "
                                                        "field selector"))
    else:
        causes.append(fe.invalid(f"{path}.operator", operator, "not a valid selector operator"))
    key = req.get("key") or ""
    if key != "metadata.name":
        causes.append(fe.invalid(f"{path}.key", key, "not a valid field selector key"))
    else:
        for j, v in enumerate(values):
            causes.extend(fe.invalid(f"{path}.values[{j}]", v, m)
                          for m in names.name_is_dns_subdomain(str(v), False))
    return causes


def _term(term: Any, path: str, check_values: bool) -> list[Cause]:
    """``ValidateNodeSelectorTerm``."""
    if not isinstance(term, dict):
        return []
    causes: list[Cause] = []
    for j, req in enumerate(term.get("matchExpressions") or []):
        causes.extend(_node_requirement(req, f"{path}.matchExpressions[{j}]", check_values))
    for j, req in enumerate(term.get("matchFields") or []):
        causes.extend(_field_requirement(req, f"{path}.matchFields[{j}]"))
    return causes


def _pod_affinity_term(term: Any, path: str) -> list[Cause]:
    """``validatePodAffinityTerm`` (selectors, namespaces, topologyKey)."""
    if not isinstance(term, dict):
        return []
    causes: list[Cause] = []
    for key in ("labelSelector", "namespaceSelector"):
        if term.get(key) is not None:
            causes.extend(labels.validate_label_selector(term[key], f"{path}.{key}"))
    for ns in term.get("namespaces") or []:
        causes.extend(fe.invalid(f"{path}.namespace", ns, m)
                      for m in names.name_is_dns_label(str(ns), False))
    topology = term.get("topologyKey") or ""
    if not topology:
        causes.append(fe.required(f"{path}.topologyKey", "can not be empty"))
    causes.extend(_label_name(topology, f"{path}.topologyKey"))
    return causes


def _pod_affinity(affinity: Any, path: str) -> list[Cause]:
    if not isinstance(affinity, dict):
        return []
    causes: list[Cause] = []
    required = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
                             or []):
        causes.extend(_pod_affinity_term(term, f"{required}[{i}]"))
    preferred = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, weighted in enumerate(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
                                 or []):
        if not isinstance(weighted, dict):
            continue
        weight = weighted.get("weight") or 0
        if not 0 < weight <= 100:
            causes.append(fe.invalid(f"{preferred}[{i}].weight", weight, WEIGHT_RANGE))
        causes.extend(_pod_affinity_term(weighted.get("podAffinityTerm"),
                                         f"{preferred}[{i}].podAffinityTerm"))
    return causes


def validate_node_selector(selector: dict[str, Any], path: str) -> list[Cause]:
    """``ValidateNodeSelector``: at least one term, each a valid node selector term."""
    rp = f"{path}.nodeSelectorTerms"
    terms = selector.get("nodeSelectorTerms") or []
    causes = [] if terms else [fe.required(rp, "must have at least one node selector term")]
    for i, term in enumerate(terms):
        causes.extend(_term(term, f"{rp}[{i}]", True))
    return causes


def validate_affinity(affinity: Any, path: str) -> list[Cause]:
    """``validateAffinity``: node affinity, pod affinity, pod anti-affinity."""
    if not isinstance(affinity, dict):
        return []
    causes: list[Cause] = []
    node = affinity.get("nodeAffinity")
    if isinstance(node, dict):
        np = f"{path}.nodeAffinity"
        required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, dict):
            causes.extend(validate_node_selector(
                required, f"{np}.requiredDuringSchedulingIgnoredDuringExecution"))
        pp = f"{np}.preferredDuringSchedulingIgnoredDuringExecution"
        for i, preferred in enumerate(
                node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            if not isinstance(preferred, dict):
                continue
            weight = preferred.get("weight") or 0
            if not 0 < weight <= 100:
                causes.append(fe.invalid(f"{pp}[{i}].weight", weight, WEIGHT_RANGE))
            causes.extend(_term(preferred.get("preference"), f"{pp}[{i}].preference", False))
    causes.extend(_pod_affinity(affinity.get("podAffinity"), f"{path}.podAffinity"))
    causes.extend(_pod_affinity(affinity.get("podAntiAffinity"), f"{path}.podAntiAffinity"))
    return causes


SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
NOT_POSITIVE = "must be greater than zero"


def validate_topology_spread_constraints(constraints: Any, path: str) -> list[Cause]:
    """``validateTopologySpreadConstraints``: a positive skew, a topology key, a known
    action, one constraint per (key, action), minDomains only with DoNotSchedule."""
    items = [c for c in constraints or [] if isinstance(c, dict)]
    causes: list[Cause] = []
    for i, c in enumerate(items):
        p = f"{path}[{i}]"
        skew = c.get("maxSkew") or 0
        if skew <= 0:
            causes.append(fe.invalid(f"{p}.maxSkew", skew, NOT_POSITIVE))
        key = c.get("topologyKey") or ""
        if not key:
            causes.append(fe.required(f"{p}.topologyKey", "can not be empty"))
        action = c.get("whenUnsatisfiable") or ""
        if action not in SPREAD_ACTIONS:
            causes.append(fe.not_supported(f"{p}.whenUnsatisfiable", action, SPREAD_ACTIONS))
        if any(key == (o.get("topologyKey") or "") and action == (o.get("whenUnsatisfiable")
                                                                  or "")
               for o in items[i + 1:]):
            causes.append(fe.duplicate(f"{p}.{{topologyKey, whenUnsatisfiable}}",
                                       f"{{{key}, {action}}}"))
        min_domains = c.get("minDomains")
        if min_domains is not None:
            if min_domains <= 0:
                causes.append(fe.invalid(f"{p}.minDomains", min_domains, NOT_POSITIVE))
            if action != "DoNotSchedule":
                causes.append(fe.invalid(f"{p}.minDomains", min_domains,
                                         "can only use minDomains if "
                                         f"whenUnsatisfiable=DoNotSchedule, not {action}"))
        for policy_key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = c.get(policy_key)
            if policy is not None and policy not in NODE_INCLUSION_POLICIES:
                causes.append(fe.not_supported(f"{p}.{policy_key}", policy,
                                               NODE_INCLUSION_POLICIES))
        if c.get("labelSelector") is not None:
            causes.extend(labels.validate_label_selector(c["labelSelector"],
                                                         f"{p}.labelSelector"))
    return causes
