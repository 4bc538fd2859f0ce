"""admissionregistration.k8s.io/v1 defaults of ValidatingAdmissionPolicies and their bindings
(kubernetes v1.32 pkg/apis/admissionregistration/v1/defaults.go:
``SetDefaults_ValidatingAdmissionPolicySpec``, ``SetDefaults_MatchResources``,
``SetDefaults_Rule``), which Go's decoder applies before validation: a policy without a
failure policy fails closed, match resources match Equivalent requests of every namespace
and object, rules of every scope. A binding's ``paramRef.parameterNotFoundAction`` has no v1
default (it is required)."""

from __future__ import annotations

from typing import Any

from setpoint.machinery.objects import Obj


def _unset(d: Obj, key: str, value: Any) -> None:
    """Default a pointer field: only nil (absent or null) is unset."""
    if d.get(key) is None:
        d[key] = value


def _match_resources(match: Any) -> None:
    if not isinstance(match, dict):
        return
    _unset(match, "matchPolicy", "Equivalent")
    _unset(match, "namespaceSelector", {})
    _unset(match, "objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or []:
            if isinstance(rule, dict):
                _unset(rule, "scope", "*")


def default_validating_admission_policy(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    _unset(spec, "failurePolicy", "Fail")
    _match_resources(spec.get("matchConstraints"))


def default_validating_admission_policy_binding(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _match_resources(spec.get("matchResources"))
