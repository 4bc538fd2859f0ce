"""The checks on the user and privileges a container runs with: privileged (baseline),
allowPrivilegeEscalation, runAsNonRoot, runAsUser (restricted) (k8s.io/pod-security-admission
policy/check_privileged.go, check_allowPrivilegeEscalation.go, check_runAsNonRoot.go,
check_runAsUser.go). The user-namespace relaxations follow the UserNamespacesPodSecurity
Standards gate, off in 1.32."""

from __future__ import annotations

from setpoint.cluster.admission.podsecurity.levels import BASELINE, RESTRICTED
from setpoint.cluster.admission.podsecurity.policy import (
    ALLOWED,
    Check,
    CheckResult,
    Obj,
    VersionedCheck,
    containers_named,
    is_windows,
    name_of,
    security_context,
    v,
    visit_containers,
)


def privileged_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad = [name_of(c) for c in visit_containers(spec)
           if (security_context(c) or {}).get("privileged") is True]
    if bad:
        return CheckResult(False, "privileged",
                           f"{containers_named(bad)} must not set securityContext.privileged=true")
    return ALLOWED


def allow_privilege_escalation_1_8(meta: Obj, spec: Obj) -> CheckResult:
    bad = [name_of(c) for c in visit_containers(spec)
           if (security_context(c) or {}).get("allowPrivilegeEscalation") is not False]
    if bad:
        return CheckResult(False, "allowPrivilegeEscalation != false", (
            f"{containers_named(bad)} must set securityContext.allowPrivilegeEscalation=false"))
    return ALLOWED


def allow_privilege_escalation_1_25(meta: Obj, spec: Obj) -> CheckResult:
    return ALLOWED if is_windows(spec) else allow_privilege_escalation_1_8(meta, spec)


def run_as_non_root_1_0(meta: Obj, spec: Obj) -> CheckResult:
    setters: list[str] = []
    pod_non_root = False
    pod_value = (security_context(spec) or {}).get("runAsNonRoot")
    if pod_value is not None:
        if pod_value is False:
            setters.append("pod")
        else:
            pod_non_root = True
    explicit: list[str] = []
    implicit: list[str] = []
    for container in visit_containers(spec):
        value = (security_context(container) or {}).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(name_of(container))
        elif not pod_non_root:
            implicit.append(name_of(container))
    if explicit:
        setters.append(containers_named(explicit))
    if setters:
        return CheckResult(False, "runAsNonRoot != true", " and ".join(setters)
                           + " must not set securityContext.runAsNonRoot=false")
    if implicit:
        return CheckResult(False, "runAsNonRoot != true", (
            f"pod or {containers_named(implicit)} must set securityContext.runAsNonRoot=true"))
    return ALLOWED


def _root(obj: Obj) -> bool:
    value = (security_context(obj) or {}).get("runAsUser")
    return value == 0 and value is not False


def run_as_user_1_23(meta: Obj, spec: Obj) -> CheckResult:
    setters = ["pod"] if _root(spec) else []
    bad = [name_of(c) for c in visit_containers(spec) if _root(c)]
    if bad:
        setters.append(containers_named(bad))
    if setters:
        return CheckResult(False, "runAsUser=0",
                           " and ".join(setters) + " must not set runAsUser=0")
    return ALLOWED


CHECKS = (
    Check("privileged", BASELINE, (VersionedCheck(v(0), privileged_1_0),)),
    Check("allowPrivilegeEscalation", RESTRICTED, (
        VersionedCheck(v(8), allow_privilege_escalation_1_8),
        VersionedCheck(v(25), allow_privilege_escalation_1_25))),
    Check("runAsNonRoot", RESTRICTED, (VersionedCheck(v(0), run_as_non_root_1_0),)),
    Check("runAsUser", RESTRICTED, (VersionedCheck(v(23), run_as_user_1_23),)),
)
