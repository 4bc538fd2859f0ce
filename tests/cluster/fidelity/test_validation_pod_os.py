"""A pod's sysctls and operating system over HTTP, with kube-apiserver 1.32's (field, reason)
causes and words.

Sources, pkg/apis/core/validation/validation.go: validatePodSpecSecurityContext,
validateSysctls, IsValidSysctlName, ValidateHostSysctl, ValidatePodSpec's OS branch,
validateOS, validateLinux, validateWindows; k8s.io/component-helpers/node/util/sysctl
(GetNamespace, ConvertSysctlVariableToDotsSeparator); pkg/api/pod/util.go
(VisitContainersWithPath's order, dropDisabledFields: the fields of gates off in 1.32).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube, pod

PODS = "/api/v1/namespaces/default/pods"
REQ, INV, UNSUP, FORB, DUP = ("FieldValueRequired", "FieldValueInvalid",
                              "FieldValueNotSupported", "FieldValueForbidden",
                              "FieldValueDuplicate")
SYS = "spec.securityContext.sysctls"
WINDOWS_CONTAINER = {"appArmorProfile": {"type": "RuntimeDefault"},
                     "seLinuxOptions": {"level": "s0"},
                     "seccompProfile": {"type": "RuntimeDefault"},
                     "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True,
                     "privileged": False, "allowPrivilegeEscalation": False,
                     "procMount": "Default", "runAsUser": 1, "runAsGroup": 1}

# (case, spec keys, first container keys, expected causes)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[tuple[str, str], int]]] = [
    # validateSysctls: required, the name format, then duplicates; ValidateHostSysctl for
    # every entry (a "/"-separated name is normalized first)
    ("sysctls", {"hostNetwork": True, "hostIPC": True, "securityContext": {"sysctls": [
        {"name": "", "value": "1"}, {"name": "Kernel.Bad", "value": "1"},
        {"name": "kernel.shm_rmid_forced", "value": "0"},
        {"name": "kernel.shm_rmid_forced", "value": "1"},
        {"name": "net.ipv4.ip_forward", "value": "1"},
        {"name": "net/ipv4/conf/eth0.100/forwarding", "value": "1"},
        {"name": "kernel.sem", "value": "1"}, {"name": "vm.swappiness", "value": "1"}]}}, {},
     {(f"{SYS}[0].name", REQ): 1, (f"{SYS}[1].name", INV): 1, (f"{SYS}[2].name", INV): 1,
      (f"{SYS}[3].name", DUP): 1, (f"{SYS}[3].name", INV): 1, (f"{SYS}[4].name", INV): 1,
      (f"{SYS}[5].name", INV): 1, (f"{SYS}[6].name", INV): 1}),
    ("sysctls-own-namespaces", {"securityContext": {"sysctls": [
        {"name": "net.ipv4.ip_forward", "value": "1"},
        {"name": "kernel.shm_rmid_forced", "value": "1"},
        {"name": "a" * 254, "value": "1"}]}}, {},
     {(f"{SYS}[2].name", INV): 1}),
    # validateOS: a name is required; an unknown one is NotSupported at spec.os itself, and
    # then no OS-specific rule runs
    ("os-empty", {"os": {}}, {}, {("spec.os.name", REQ): 1}),
    ("os-unknown", {"os": {"name": "darwin"},
                    "securityContext": {"windowsOptions": {"runAsUserName": "u"}}}, {},
     {("spec.os", UNSUP): 1}),
    # validateLinux: no windowsOptions anywhere
    ("linux", {"os": {"name": "linux"},
               "securityContext": {"windowsOptions": {"runAsUserName": "u"}},
               "initContainers": [{"name": "i", "image": "i", "securityContext": {
                   "windowsOptions": {"runAsUserName": "u"}}}]},
     {"securityContext": {"windowsOptions": {"runAsUserName": "u"}}},
     {("spec.securityContext.windowsOptions", FORB): 1,
      ("spec.initContainers[0].securityContext.windowsOptions", FORB): 1,
      ("spec.containers[0].securityContext.windowsOptions", FORB): 1}),
    # validateWindows: the Linux-only settings of the pod (the host namespaces as the spec's
    # own fields) and of each container
    ("windows", {"os": {"name": "windows"}, "hostPID": True, "hostIPC": True,
                 "hostUsers": True, "shareProcessNamespace": False,
                 "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"},
                                     "seLinuxOptions": {"level": "s0"},
                                     "seccompProfile": {"type": "RuntimeDefault"},
                                     "fsGroup": 1, "fsGroupChangePolicy": "Always",
                                     "sysctls": [{"name": "kernel.msgmax", "value": "1"}],
                                     "runAsUser": 1, "runAsGroup": 1,
                                     "supplementalGroups": [1]}},
     {"securityContext": WINDOWS_CONTAINER},
     {(f"spec.securityContext.{key}", FORB): 1
      for key in ("appArmorProfile", "seLinuxOptions", "seccompProfile", "fsGroup",
                  "fsGroupChangePolicy", "sysctls", "runAsUser", "runAsGroup",
                  "supplementalGroups")}
     # (hostUsers is dropped before validation: UserNamespacesSupport is off in 1.32)
     | {("spec.hostPID", FORB): 1, ("spec.hostIPC", FORB): 1,
        ("spec.shareProcessNamespace", FORB): 1,
        # the common rules still run first: an IPC sysctl on the host's IPC namespace
        (f"{SYS}[0].name", INV): 1}
     | {(f"spec.containers[0].securityContext.{key}", FORB): 1 for key in WINDOWS_CONTAINER}),
]


@pytest.mark.parametrize(("case", "spec", "container", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_pod_sysctls_and_os_are_validated(kube: Kube, case: str, spec: dict[str, Any],
                                          container: dict[str, Any],
                                          expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", PODS, pod(case, spec, container)) == Counter(expected)


def test_sysctl_and_os_messages_are_kubernetes_words(kube: Kube) -> None:
    got = kube.messages("POST", PODS, pod("words", {
        "hostNetwork": True, "os": {"name": "windows"},
        "securityContext": {"sysctls": [{"name": "Bad", "value": "1"},
                                        {"name": "net.core.somaxconn", "value": "1"}]}}, {}))
    assert got == {
        f"{SYS}[0].name": [
            'Invalid value: "Bad": must have at most 253 characters and match regex '
            r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"],
        f"{SYS}[1].name": ['Invalid value: "net.core.somaxconn": may not be specified when '
                           "'hostNetwork' is true"],
        "spec.securityContext.sysctls": ["Forbidden: cannot be set for a windows pod"]}
    got = kube.messages("POST", PODS, pod("words-os", {"os": {"name": "Linux"}}, {}))
    assert got == {"spec.os": ['Unsupported value: "Linux": supported values: "linux", '
                               '"windows"']}


def test_pods_for_each_os_with_their_own_settings_are_accepted(kube: Kube) -> None:
    for name, spec, container in (
            ("linux-ok", {"os": {"name": "linux"}, "securityContext": {
                "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"},
                            {"name": "kernel/shm_rmid_forced", "value": "1"}],
                "seccompProfile": {"type": "RuntimeDefault"}}},
             {"securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": False}}),
            ("windows-ok", {"os": {"name": "windows"}, "securityContext": {
                "windowsOptions": {"runAsUserName": "ContainerUser"}}},
             {"securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}})):
        status, body = kube.call("POST", PODS, pod(name, spec, container))
        assert status == 201, (name, body)


def test_fields_of_gates_off_in_1_32_are_dropped_not_validated(kube: Kube) -> None:
    """pkg/api/pod/util.go dropDisabledFields: UserNamespacesSupport (beta, off until 1.33),
    SupplementalGroupsPolicy and ClusterTrustBundleProjection (alpha) are off, so a new pod
    loses these fields before validation (a Windows pod is not refused for hostUsers)."""
    status, body = kube.call("POST", PODS, pod("gated", {
        "os": {"name": "windows"}, "hostUsers": False,
        "securityContext": {"supplementalGroupsPolicy": "Strict"},
        "volumes": [{"name": "bundle", "projected": {"sources": [
            {"clusterTrustBundle": {"signerName": "example.com/signer", "path": "ca.pem"}},
            {"configMap": {"name": "c"}}]}}]}, {}))
    assert status == 201, body
    spec = body["spec"]
    assert "hostUsers" not in spec
    assert "supplementalGroupsPolicy" not in spec["securityContext"]
    bundle = next(v for v in spec["volumes"] if v["name"] == "bundle")
    assert bundle["projected"]["sources"][0] == {}


def test_an_empty_supplemental_groups_list_is_set_for_a_windows_pod(kube: Kube) -> None:
    """validateWindows forbids ``SupplementalGroups != nil`` (not ``len > 0``): Go's typed
    decoding keeps ``[]`` a non-nil slice, so an empty list is refused for a Windows pod and
    template alike; on a pod that keeps it, encoding's omitempty leaves it out of the answer."""
    windows = {"os": {"name": "windows"}, "securityContext": {"supplementalGroups": []}}
    assert kube.reject("POST", PODS, pod("sg-empty", windows, {})) == Counter(
        {("spec.securityContext.supplementalGroups", FORB): 1})
    deployment = {"metadata": {"name": "sg-empty"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": pod("x", windows, {})["spec"]}}}
    assert kube.reject("POST", "/apis/apps/v1/namespaces/default/deployments",
                       deployment) == Counter(
        {("spec.template.spec.securityContext.supplementalGroups", FORB): 1})
    status, body = kube.call("POST", PODS, pod("sg-empty-linux", {
        "securityContext": {"supplementalGroups": []}}, {}))
    assert status == 201, body
    assert "supplementalGroups" not in body["spec"]["securityContext"]
    status, body = kube.call("GET", f"{PODS}/sg-empty-linux")
    assert "supplementalGroups" not in body["spec"]["securityContext"]


def test_an_empty_supplemental_groups_list_does_not_change_a_pod(kube: Kube) -> None:
    """ValidatePodUpdate compares specs with apiequality.Semantic.DeepEqual, for which an
    empty slice equals a nil one: adding ``supplementalGroups: []`` changes nothing."""
    status, created = kube.call("POST", PODS, pod("sg-update", {}, {}))
    assert status == 201, created
    status, patched = kube.call("PATCH", f"{PODS}/sg-update", {"spec": {
        "securityContext": {"supplementalGroups": []}}}, "application/merge-patch+json")
    assert status == 200, patched
    assert "supplementalGroups" not in patched["spec"]["securityContext"]
    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
