"""Windows HostProcess pods and user namespaces over HTTP, with kube-apiserver 1.32's causes
and words.

Sources, pkg/apis/core/validation/validation.go: ValidatePodSpec (the order),
validateWindowsHostProcessPod, validateHostUsers; pkg/api/pod/util.go dropDisabledFields
(UserNamespacesSupport is off in 1.32, so ``hostUsers`` never reaches validation).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube, pod

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
INV = "FieldValueInvalid"
HP = "securityContext.windowsOptions.hostProcess"


def _wo(host_process: bool) -> dict[str, Any]:
    return {"securityContext": {"windowsOptions": {"hostProcess": host_process}}}


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[tuple[str, str], int]]] = [
    # one HostProcess container among plain ones, off the host's network
    ("mixed", {"initContainers": [{"name": "i", "image": "i", **_wo(True)}]}, {},
     {("spec", INV): 1, ("spec.hostNetwork", INV): 1}),
    # the pod's value, inherited by the container that leaves it unset, contradicted by one
    ("contradicted", {"hostNetwork": True, **_wo(True),
                      "initContainers": [{"name": "i", "image": "i", **_wo(False)}]}, {},
     {(f"spec.initContainers[0].{HP}", INV): 1, ("spec", INV): 1}),
    # every container HostProcess, but no host network
    ("no-host-network", _wo(True), {}, {("spec.hostNetwork", INV): 1}),
]


@pytest.mark.parametrize(("case", "spec", "container", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_host_process_pods_are_validated(kube: Kube, case: str, spec: dict[str, Any],
                                         container: dict[str, Any],
                                         expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", PODS, pod(f"hp-{case}", spec, container)) == Counter(expected)


def test_host_process_messages_are_kubernetes_words(kube: Kube) -> None:
    got = kube.messages("POST", PODS, pod("hp-words", {**_wo(False), "containers": [
        {"name": "a", "image": "i", **_wo(True)}, {"name": "b", "image": "i"}]}, {}))
    assert got == {
        f"spec.containers[0].{HP}": [
            "Invalid value: true: pod hostProcess value must be identical if both are "
            "specified, was false"],
        "spec": ['Invalid value: "": If pod contains any hostProcess containers then all '
                 "containers must be HostProcess containers"],
        "spec.hostNetwork": ["Invalid value: false: hostNetwork must be true if pod contains "
                             "any hostProcess containers"]}


def test_host_process_pod_templates_are_validated(kube: Kube) -> None:
    """ValidatePodSpec runs the rule for a template too (ValidatePodTemplateSpec)."""
    deployment = {"metadata": {"name": "hp-deploy"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": pod("x", _wo(True), {})["spec"]}}}
    assert kube.reject("POST", DEPLOYMENTS, deployment) == Counter(
        {("spec.template.spec.hostNetwork", INV): 1})


def test_a_host_process_pod_on_the_host_network_is_accepted(kube: Kube) -> None:
    status, body = kube.call("POST", PODS, pod("hp-ok", {
        "hostNetwork": True, "os": {"name": "windows"}, **_wo(True),
        "initContainers": [{"name": "i", "image": "i", **_wo(True)}]}, {}))
    assert status == 201, body


def test_host_users_false_is_dropped_so_host_namespaces_stay_allowed(kube: Kube) -> None:
    """validateHostUsers forbids hostNetwork/hostPID/hostIPC beside ``hostUsers: false``,
    but in 1.32 dropDisabledFields removes ``hostUsers`` from a new pod first (the gate is
    off and no old pod uses it): what a client sees is the pod accepted without it."""
    status, body = kube.call("POST", PODS, pod("userns", {
        "hostUsers": False, "hostNetwork": True, "hostPID": True, "hostIPC": True}, {}))
    assert status == 201, body
    assert "hostUsers" not in body["spec"]
    assert (body["spec"]["hostNetwork"], body["spec"]["hostPID"], body["spec"]["hostIPC"]) \
        == (True, True, True)
