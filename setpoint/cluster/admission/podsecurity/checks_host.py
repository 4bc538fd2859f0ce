"""The baseline checks on what a pod shares with its node: host namespaces, host ports,
sysctls, Windows host processes (k8s.io/pod-security-admission policy/check_hostNamespaces.go,
check_hostPorts.go, check_sysctls.go, check_windowsHostProcess.go)."""

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


def host_namespaces_1_0(meta: Obj, spec: Obj) -> CheckResult:
    shared = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC")
              if spec.get(key) is True]
    if shared:
        return CheckResult(False, "host namespaces", ", ".join(shared))
    return ALLOWED


def host_ports_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad: list[str] = []
    ports: set[str] = set()
    for container in visit_containers(spec):
        used = {str(port.get("hostPort")) for port in container.get("ports") or ()
                if isinstance(port, dict) and port.get("hostPort")}
        if used:
            bad.append(name_of(container))
            ports |= used
    if bad:
        # (sets.String.List: the ports sorted as strings)
        return CheckResult(False, "hostPort", (
            f"{pluralize('container', 'containers', len(bad))} {join_quote(bad)} "
            f"{pluralize('uses', 'use', len(bad))} "
            f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}"))
    return ALLOWED


SYSCTLS_ALLOWED_1_0 = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"})
SYSCTLS_ALLOWED_1_27 = SYSCTLS_ALLOWED_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_ALLOWED_1_29 = SYSCTLS_ALLOWED_1_27 | {
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SYSCTLS_ALLOWED_1_32 = SYSCTLS_ALLOWED_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def sysctls(allowed: frozenset[str]) -> CheckPod:
    def check(meta: Obj, spec: Obj) -> CheckResult:
        context = security_context(spec) or {}
        forbidden = [str(sysctl.get("name")) for sysctl in context.get("sysctls") or ()
                     if isinstance(sysctl, dict) and sysctl.get("name") not in allowed]
        if forbidden:
            return CheckResult(False, "forbidden sysctls", ", ".join(forbidden))
        return ALLOWED
    return check


def _host_process(obj: Obj) -> bool:
    context = security_context(obj) or {}
    return ((context.get("windowsOptions") or {}).get("hostProcess")) is True


def windows_host_process_1_0(meta: Obj, spec: Obj) -> CheckResult:
    bad = [name_of(c) for c in visit_containers(spec) if _host_process(c)]
    setters = ["pod"] if _host_process(spec) else []
    if bad:
        setters.append(containers_named(bad))
    if setters:
        return CheckResult(False, "hostProcess", " and ".join(setters)
                           + " must not set securityContext.windowsOptions.hostProcess=true")
    return ALLOWED


CHECKS = (
    Check("hostNamespaces", BASELINE, (VersionedCheck(v(0), host_namespaces_1_0),)),
    Check("hostPorts", BASELINE, (VersionedCheck(v(0), host_ports_1_0),)),
    Check("sysctls", BASELINE, (
        VersionedCheck(v(0), sysctls(SYSCTLS_ALLOWED_1_0)),
        VersionedCheck(v(27), sysctls(SYSCTLS_ALLOWED_1_27)),
        VersionedCheck(v(29), sysctls(SYSCTLS_ALLOWED_1_29)),
        VersionedCheck(v(32), sysctls(SYSCTLS_ALLOWED_1_32)))),
    Check("windowsHostProcess", BASELINE, (VersionedCheck(v(0), windows_host_process_1_0),)),
)
