"""The seccomp checks: no Unconfined profile (baseline: the alpha annotations before 1.19,
the fields from 1.19); RuntimeDefault or Localhost set for every container (restricted,
replacing the baseline check) (k8s.io/pod-security-admission
policy/check_seccompProfile_baseline.go, check_seccompProfile_restricted.go)."""

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
    pluralize,
    security_context,
    v,
    visit_containers,
)
from setpoint.machinery.gofmt import go_quote

SECCOMP_BASELINE = "seccompProfile_baseline"
ANNOTATION_KEY_POD = "seccomp.security.alpha.kubernetes.io/pod"
ANNOTATION_KEY_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"


def _valid_type(profile_type: object) -> bool:
    return profile_type in ("Localhost", "RuntimeDefault")


def _valid_annotation(value: str) -> bool:
    return value in ("runtime/default", "docker/default") or value.startswith("localhost/")


def seccomp_profile_baseline_1_0(meta: Obj, spec: Obj) -> CheckResult:
    annotations = meta.get("annotations") or {}
    forbidden: set[str] = set()
    keys = [ANNOTATION_KEY_POD] + [ANNOTATION_KEY_CONTAINER_PREFIX + name_of(c)
                                   for c in visit_containers(spec)]
    for key in keys:
        value = annotations.get(key)
        if value is not None and not _valid_annotation(str(value)):
            forbidden.add(f"{key}={go_quote(str(value))}")
    if forbidden:
        return CheckResult(False, "seccompProfile", (
            f"forbidden {pluralize('annotation', 'annotations', len(forbidden))} "
            f"{', '.join(sorted(forbidden))}"))
    return ALLOWED


def _profile(obj: Obj) -> Obj | None:
    profile = (security_context(obj) or {}).get("seccompProfile")
    return profile if isinstance(profile, dict) else None


def _explicit_refusal(spec: Obj, *, restricted: bool) -> tuple[CheckResult | None, list[str]]:
    """The refusal of profiles set to a forbidden type, and the containers that set none
    where the pod sets no valid one either."""
    setters: list[str] = []
    bad_values: set[str] = set()
    pod_set = False
    pod_profile = _profile(spec)
    if pod_profile is not None:
        if not _valid_type(pod_profile.get("type")):
            setters.append("pod")
            bad_values.add(str(pod_profile.get("type") or ""))
        else:
            pod_set = True
    explicit: list[str] = []
    implicit: list[str] = []
    for container in visit_containers(spec):
        profile = _profile(container)
        if profile is not None:
            if not _valid_type(profile.get("type")):
                explicit.append(name_of(container))
                bad_values.add(str(profile.get("type") or ""))
        elif restricted and not pod_set:
            implicit.append(name_of(container))
    if explicit:
        setters.append(containers_named(explicit))
    if setters:
        return CheckResult(False, "seccompProfile", (
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
            f"{join_quote(sorted(bad_values))}")), implicit
    return None, implicit


def seccomp_profile_baseline_1_19(meta: Obj, spec: Obj) -> CheckResult:
    refusal, _ = _explicit_refusal(spec, restricted=False)
    return refusal or ALLOWED


def seccomp_profile_restricted_1_19(meta: Obj, spec: Obj) -> CheckResult:
    refusal, implicit = _explicit_refusal(spec, restricted=True)
    if refusal is not None:
        return refusal
    if implicit:
        return CheckResult(False, "seccompProfile", (
            f"pod or {containers_named(implicit)} must set securityContext.seccompProfile.type "
            'to "RuntimeDefault" or "Localhost"'))
    return ALLOWED


def seccomp_profile_restricted_1_25(meta: Obj, spec: Obj) -> CheckResult:
    return ALLOWED if is_windows(spec) else seccomp_profile_restricted_1_19(meta, spec)


CHECKS = (
    Check(SECCOMP_BASELINE, BASELINE, (
        VersionedCheck(v(0), seccomp_profile_baseline_1_0),
        VersionedCheck(v(19), seccomp_profile_baseline_1_19))),
    Check("seccompProfile_restricted", RESTRICTED, (
        VersionedCheck(v(19), seccomp_profile_restricted_1_19, (SECCOMP_BASELINE,)),
        VersionedCheck(v(25), seccomp_profile_restricted_1_25, (SECCOMP_BASELINE,)))),
)
