"""RuntimeClass admission over real HTTP (plugin/pkg/admission/runtimeclass/admission.go and
pkg/util/tolerations/tolerations.go ``MergeTolerations``): overhead and scheduling copied from
the pod's RuntimeClass; unknown classes and conflicting values refused with 403."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from setpoint.cluster.admission.runtimeclass import merge_tolerations
from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

PODS = "/api/v1/namespaces/default/pods"
CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
_names = itertools.count()


def _pod(runtime_class: str | None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": f"rc-{next(_names)}"}, "spec": {
        "containers": [{"name": "c", "image": "busybox:1.36"}], **spec}}
    if runtime_class is not None:
        body["spec"]["runtimeClassName"] = runtime_class
    return body


@pytest.fixture(scope="module")
def gvisor() -> dict[str, Any]:
    return {"metadata": {"name": "gvisor"}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                           "tolerations": [{"key": "sandbox", "operator": "Exists",
                                            "effect": "NoSchedule"}]}}


async def _class(api: API, body: dict[str, Any]) -> None:
    status, got = await api.get(f"{CLASSES}/{body['metadata']['name']}")
    if status == 404:
        status, got = await api.post(CLASSES, body)
        assert status == 201, got


async def test_the_class_overhead_and_scheduling_are_copied_into_the_pod(
        module_api: API, gvisor: dict[str, Any]) -> None:
    await _class(module_api, gvisor)
    status, pod = await module_api.post(PODS, _pod("gvisor", nodeSelector={"zone": "a"}))
    assert status == 201, pod
    spec = pod["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"zone": "a", "sandbox": "gvisor"}
    assert {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    # the same overhead, written another way, is accepted
    status, pod = await module_api.post(PODS, _pod("gvisor",
                                                   overhead={"cpu": "0.25", "memory": "120Mi"}))
    assert status == 201, pod


async def test_unknown_classes_and_conflicts_are_forbidden(
        module_api: API, gvisor: dict[str, Any]) -> None:
    await _class(module_api, gvisor)
    cases = [
        (_pod("missing"), 'pod rejected: RuntimeClass "missing" not found'),
        (_pod("gvisor", overhead={"cpu": "1"}),
         "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
        (_pod("gvisor", nodeSelector={"sandbox": "kata"}),
         "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; "
         "pod.spec.nodeSelector[sandbox] = kata"),
        (_pod(None, overhead={"cpu": "1"}),
         "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"),
    ]
    for body, reason in cases:
        name = body["metadata"]["name"]
        status, answer = await module_api.post(PODS, body)
        assert (status, answer["reason"], answer["message"], answer["details"]) == (
            403, "Forbidden", f'pods "{name}" is forbidden: {reason}',
            {"name": name, "kind": "pods"}), answer


async def test_merge_tolerations_keeps_only_what_no_other_covers() -> None:
    exists_all = {"operator": "Exists"}
    sandbox = {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}
    equal = {"key": "sandbox", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
    short = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}
    long = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    assert merge_tolerations([equal], [sandbox]) == [sandbox]
    assert merge_tolerations([sandbox], [sandbox]) == [sandbox]
    assert merge_tolerations([short], [long]) == [long]
    assert merge_tolerations([sandbox, short], [exists_all]) == [exists_all]
