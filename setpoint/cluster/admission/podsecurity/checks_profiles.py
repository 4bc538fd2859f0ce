"""The baseline checks on the confinement profiles a pod may not weaken: AppArmor, SELinux
options, procMount (k8s.io/pod-security-admission policy/check_appArmorProfile.go,
check_seLinuxOptions.go, check_procMount.go)."""

from __future__ import annotations

from setpoint.cluster.admission.podsecurity.levels import BASELINE
from setpoint.cluster.admission.podsecurity.policy import (
    ALLOWED,
    Check,
    CheckPod,
    CheckResult,
    Obj,
    VersionedCheck,
    containers_named,
    join_quote,
    name_of,
    pluralize,
    security_context,
    v,
    visit_containers,
)
from setpoint.machinery.gofmt import go_quote

APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def _allowed_annotation_value(profile: str) -> bool:
    return not profile or profile == "runtime/default" or profile.startswith("localhost/")


def _apparmor_type(obj: Obj) -> tuple[bool, str]:
    """Whether ``obj`` sets an AppArmor profile, and its type."""
    profile = (security_context(obj) or {}).get("appArmorProfile")
    if not isinstance(profile, dict):
        return False, ""
    return True, str(profile.get("type") or "")


def app_armor_profile_1_0(meta: Obj, spec: Obj) -> CheckResult:
    setters: list[str] = []
    bad_values: set[str] = set()
    allowed_types = ("RuntimeDefault", "Localhost")
    present, profile_type = _apparmor_type(spec)
    if present and profile_type not in allowed_types:
        setters.append("pod")
        bad_values.add(profile_type)
    bad: list[str] = []
    for container in visit_containers(spec):
        present, profile_type = _apparmor_type(container)
        if present and profile_type not in allowed_types:
            bad.append(name_of(container))
            bad_values.add(profile_type)
    if bad:
        setters.append(containers_named(bad))
    forbidden = sorted(f"{key}={go_quote(str(value))}"
                       for key, value in (meta.get("annotations") or {}).items()
                       if key.startswith(APPARMOR_ANNOTATION_PREFIX)
                       and not _allowed_annotation_value(str(value)))
    values = sorted(bad_values) + forbidden
    if forbidden:
        setters.append(pluralize("annotation", "annotations", len(forbidden)))
    if setters:
        return CheckResult(
            False,
            pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
            f"{' and '.join(setters)} must not set AppArmor profile type to "
            f"{join_quote(values)}")
    return ALLOWED


SELINUX_ALLOWED_TYPES_1_0 = frozenset({"", "container_t", "container_init_t",
                                       "container_kvm_t"})
SELINUX_ALLOWED_TYPES_1_31 = SELINUX_ALLOWED_TYPES_1_0 | {"container_engine_t"}


def se_linux_options(allowed_types: frozenset[str]) -> CheckPod:
    def check(meta: Obj, spec: Obj) -> CheckResult:
        bad_types: set[str] = set()
        set_user = set_role = False

        def valid(obj: Obj) -> bool:
            nonlocal set_user, set_role
            options = (security_context(obj) or {}).get("seLinuxOptions")
            if not isinstance(options, dict):
                return True
            ok = True
            if str(options.get("type") or "") not in allowed_types:
                ok = False
                bad_types.add(str(options.get("type") or ""))
            if options.get("user"):
                set_user = True
                ok = False
            if options.get("role"):
                set_role = True
                ok = False
            return ok

        setters = [] if valid(spec) else ["pod"]
        bad = [name_of(c) for c in visit_containers(spec) if not valid(c)]
        if bad:
            setters.append(containers_named(bad))
        if not setters:
            return ALLOWED
        data: list[str] = []
        if bad_types:
            data.append(f"{pluralize('type', 'types', len(bad_types))} "
                        f"{join_quote(sorted(bad_types))}")
        if set_user:
            data.append("user may not be set")
        if set_role:
            data.append("role may not be set")
        return CheckResult(False, "seLinuxOptions", (
            f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: "
            f"{'; '.join(data)}"))
    return check


def proc_mount_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    types: set[str] = set()
    for container in visit_containers(spec):
        proc_mount = (security_context(container) or {}).get("procMount")
        if proc_mount is not None and proc_mount != "Default":
            bad.append(name_of(container))
            types.add(str(proc_mount))
    if bad:
        return CheckResult(False, "procMount", (
            f"{containers_named(bad)} must not set securityContext.procMount to "
            f"{join_quote(sorted(types))}"))
    return ALLOWED


CHECKS = (
    Check("appArmorProfile", BASELINE, (VersionedCheck(v(0), app_armor_profile_1_0),)),
    Check("seLinuxOptions", BASELINE, (
        VersionedCheck(v(0), se_linux_options(SELINUX_ALLOWED_TYPES_1_0)),
        VersionedCheck(v(31), se_linux_options(SELINUX_ALLOWED_TYPES_1_31)))),
    Check("procMount", BASELINE, (VersionedCheck(v(0), proc_mount_1_0),)),
)
