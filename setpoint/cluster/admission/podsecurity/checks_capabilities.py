"""The capability checks: only the default set added (baseline); ALL dropped and at most
NET_BIND_SERVICE added (restricted, replacing the baseline check) (k8s.io/pod-security-admission
policy/check_capabilities_baseline.go, check_capabilities_restricted.go)."""

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
    join_quote,
    name_of,
    security_context,
    v,
    visit_containers,
)

CAPABILITIES_BASELINE = "capabilities_baseline"
CAPABILITIES_ALLOWED_1_0 = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def _capabilities(container: Obj) -> Obj | None:
    capabilities = (security_context(container) or {}).get("capabilities")
    return capabilities if isinstance(capabilities, dict) else None


def capabilities_baseline_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    non_default: set[str] = set()
    for container in visit_containers(spec):
        added = {str(c) for c in (_capabilities(container) or {}).get("add") or ()}
        if added - CAPABILITIES_ALLOWED_1_0:
            bad.append(name_of(container))
            non_default |= added - CAPABILITIES_ALLOWED_1_0
    if bad:
        return CheckResult(False, "non-default capabilities", (
            f"{containers_named(bad)} must not include {join_quote(sorted(non_default))} "
            "in securityContext.capabilities.add"))
    return ALLOWED


def capabilities_restricted_1_22(meta: Obj, spec: Obj) -> CheckResult:
    missing_drop_all: list[str] = []
    adding_forbidden: list[str] = []
    forbidden: set[str] = set()
    for container in visit_containers(spec):
        capabilities = _capabilities(container)
        if capabilities is None:
            missing_drop_all.append(name_of(container))
            continue
        if "ALL" not in (capabilities.get("drop") or ()):
            missing_drop_all.append(name_of(container))
        added = {str(c) for c in capabilities.get("add") or ()} - {"NET_BIND_SERVICE"}
        if added:
            adding_forbidden.append(name_of(container))
            forbidden |= added
    details: list[str] = []
    if missing_drop_all:
        details.append(f'{containers_named(missing_drop_all)} must set '
                       'securityContext.capabilities.drop=["ALL"]')
    if adding_forbidden:
        details.append(f"{containers_named(adding_forbidden)} must not include "
                       f"{join_quote(sorted(forbidden))} in securityContext.capabilities.add")
    if details:
        return CheckResult(False, "unrestricted capabilities", "; ".join(details))
    return ALLOWED


def capabilities_restricted_1_25(meta: Obj, spec: Obj) -> CheckResult:
    return ALLOWED if is_windows(spec) else capabilities_restricted_1_22(meta, spec)


CHECKS = (
    Check(CAPABILITIES_BASELINE, BASELINE, (VersionedCheck(v(0), capabilities_baseline_1_0),)),
    Check("capabilities_restricted", RESTRICTED, (
        VersionedCheck(v(22), capabilities_restricted_1_22, (CAPABILITIES_BASELINE,)),
        VersionedCheck(v(25), capabilities_restricted_1_25, (CAPABILITIES_BASELINE,)))),
)
