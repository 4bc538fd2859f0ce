"""What a fresh kube-apiserver 1.32 holds besides namespaces and RBAC, over real HTTP and
through real kubectl:

- the system PriorityClasses (kubernetes pkg/apis/scheduling/v1/helpers.go
  ``systemPriorityClasses``, created by pkg/registry/scheduling/rest/storage_scheduling.go's
  post-start hook), guarded by pkg/apis/scheduling/validation/validation.go and
  pkg/registry/scheduling/priorityclass/storage/storage.go ``Delete``, and resolved by the
  Priority admission plugin (plugin/pkg/admission/priority/admission.go);
- the API Priority and Fairness configuration of k8s.io/apiserver v0.32
  pkg/apis/flowcontrol/bootstrap/default.go, with the ``Dangling`` status the config
  controller applies (pkg/util/flowcontrol/apf_controller.go ``presyncFlowSchemaStatus``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl, item_names
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

PC = "/apis/scheduling.k8s.io/v1/priorityclasses"
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
FLOW_SCHEMAS = ["catch-all", "endpoint-controller", "exempt", "global-default",
                "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts",
                "probes", "service-accounts", "system-leader-election", "system-node-high",
                "system-nodes", "workload-leader-election"]
PRIORITY_LEVELS = ["catch-all", "exempt", "global-default", "leader-election", "node-high",
                   "system", "workload-high", "workload-low"]


def _rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines()[1:]}


def _causes(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in out["details"]["causes"]]


async def test_system_priority_classes_exist(module_api: API, module_kubectl: Kubectl) -> None:
    """helpers.go: system-node-critical 2000001000 and system-cluster-critical 2000000000,
    their descriptions, PreemptLowerPriority by defaulting, not the global default."""
    status, out = await module_api.get(f"{PC}/system-node-critical")
    assert status == 200, out
    assert (out["value"], out["description"], out["preemptionPolicy"]) == (
        2000001000, "Used for system critical pods that must not be moved from their "
                    "current node.", "PreemptLowerPriority")
    assert "globalDefault" not in out
    status, out = await module_api.get(f"{PC}/system-cluster-critical")
    assert status == 200, out
    assert (out["value"], out["description"]) == (
        2000000000, "Used for system critical pods that must run in the cluster, but can be "
                    "moved to another node if necessary.")
    code, printed, err = await module_kubectl("get", "priorityclasses")
    assert code == 0, err
    rows = _rows(printed)
    assert rows["system-node-critical"][1:3] == ["2000001000", "false"]
    assert rows["system-cluster-critical"][1:3] == ["2000000000", "false"]


@pytest.mark.parametrize(("body", "field", "message"), [
    ({"metadata": {"name": "system-mine"}, "value": 10}, "metadata.name",
     "priority class names with 'system-' prefix are reserved for system use only. error: "
     "system-mine is not a known system priority class"),
    ({"metadata": {"name": "too-high"}, "value": 1000000001}, "value",
     "maximum allowed value of a user defined priority is 1000000000"),
])
async def test_priority_class_validation(module_api: API, body: dict[str, Any], field: str,
                                         message: str) -> None:
    """validation.go ValidatePriorityClass: the ``system-`` prefix is reserved; user classes
    stay at or below HighestUserDefinablePriority (422 with the field cause)."""
    status, out = await module_api.post(PC, {"apiVersion": "scheduling.k8s.io/v1",
                                             "kind": "PriorityClass", **body})
    assert status == 422, out
    assert _causes(out) == [("FieldValueForbidden", field, f"Forbidden: {message}")]


async def test_system_priority_classes_cannot_change_or_go(module_api: API,
                                                           module_kubectl: Kubectl) -> None:
    """ValidatePriorityClassUpdate: value is immutable; storage.go Delete: a system class
    cannot be deleted (403), through the API and through kubectl."""
    status, live = await module_api.get(f"{PC}/system-cluster-critical")
    assert status == 200, live
    status, out = await module_api.put(f"{PC}/system-cluster-critical",
                                       {**live, "value": 5})
    assert status == 422, out
    assert ("FieldValueForbidden", "value", "Forbidden: may not be changed in an update.") \
        in _causes(out)
    status, out = await module_api.delete(f"{PC}/system-node-critical")
    assert status == 403, out
    assert out["message"] == ('priorityclasses.scheduling.k8s.io "system-node-critical" is '
                              'forbidden: this is a system priority class and cannot be '
                              'deleted')
    code, _, err = await module_kubectl("delete", "priorityclass", "system-cluster-critical")
    assert code != 0
    assert "this is a system priority class and cannot be deleted" in err
    status, _ = await module_api.get(f"{PC}/system-cluster-critical")
    assert status == 200


async def test_pod_priority_resolves_from_system_class(module_api: API) -> None:
    """priority/admission.go: priorityClassName resolves to spec.priority and the class's
    preemptionPolicy on create; an unknown class is refused (403)."""
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "critical"},
           "spec": {"priorityClassName": "system-cluster-critical",
                    "containers": [{"name": "c", "image": "busybox"}]}}
    status, out = await module_api.post("/api/v1/namespaces/default/pods", pod)
    assert status == 201, out
    assert (out["spec"]["priority"], out["spec"]["preemptionPolicy"]) == (
        2000000000, "PreemptLowerPriority")
    pod["metadata"]["name"] = "unknown-class"
    pod["spec"]["priorityClassName"] = "no-such-class"
    status, out = await module_api.post("/api/v1/namespaces/default/pods", pod)
    assert status == 403, out
    assert out["message"].endswith("no PriorityClass with name no-such-class was found")


async def test_flowcontrol_bootstrap_configuration(module_api: API) -> None:
    """default.go: the mandatory and suggested FlowSchemas and PriorityLevelConfigurations,
    annotated for auto-update, each FlowSchema's Dangling condition False/Found."""
    status, schemas = await module_api.get(f"{FC}/flowschemas")
    assert status == 200, schemas
    assert item_names(schemas) == FLOW_SCHEMAS
    status, levels = await module_api.get(f"{FC}/prioritylevelconfigurations")
    assert status == 200, levels
    assert item_names(levels) == PRIORITY_LEVELS
    for item in schemas["items"] + levels["items"]:
        assert item["metadata"]["annotations"] == {"apf.kubernetes.io/autoupdate-spec": "true"}
        # flowschema/strategy.go PrepareForCreate: generation 1; a status write keeps it
        assert item["metadata"]["generation"] == 1
    by_name = {s["metadata"]["name"]: s for s in schemas["items"]}
    for name, schema in by_name.items():
        level = schema["spec"]["priorityLevelConfiguration"]["name"]
        [condition] = schema["status"]["conditions"]
        assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
            "type": "Dangling", "status": "False", "reason": "Found",
            "message": f'This FlowSchema references the PriorityLevelConfiguration object '
                       f'named "{level}" and it exists'}, name
    assert by_name["system-node-high"]["spec"] == {
        "priorityLevelConfiguration": {"name": "node-high"}, "matchingPrecedence": 400,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:nodes"}}],
                   "resourceRules": [
                       {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes",
                                                                         "nodes/status"],
                        "clusterScope": True, "namespaces": ["*"]},
                       {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"],
                        "resources": ["leases"], "namespaces": ["*"]}]}]}
    assert "distinguisherMethod" not in by_name["exempt"]["spec"]
    levels_by_name = {level["metadata"]["name"]: level for level in levels["items"]}
    assert levels_by_name["catch-all"]["spec"] == {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"},
        "lendablePercent": 0}}
    assert levels_by_name["workload-low"]["spec"]["limited"] == {
        "nominalConcurrencyShares": 100, "lendablePercent": 90, "limitResponse": {
            "type": "Queue", "queuing": {"queues": 128, "handSize": 6,
                                         "queueLengthLimit": 50}}}
    assert levels_by_name["exempt"]["spec"] == {"type": "Exempt", "exempt": {
        "nominalConcurrencyShares": 0, "lendablePercent": 0}}


async def test_kubectl_lists_flowcontrol_configuration(module_kubectl: Kubectl) -> None:
    """kubectl get flowschemas / prioritylevelconfigurations over the bootstrap objects."""
    code, printed, err = await module_kubectl("get", "flowschemas")
    assert code == 0, err
    rows = _rows(printed)
    assert sorted(rows) == FLOW_SCHEMAS
    assert rows["exempt"][1:4] == ["exempt", "1", "<none>"]
    assert rows["catch-all"][1:4] == ["catch-all", "10000", "ByUser"]
    assert rows["exempt"][-1] == "False"  # MISSINGPL
    code, printed, err = await module_kubectl("get", "prioritylevelconfigurations")
    assert code == 0, err
    rows = _rows(printed)
    assert sorted(rows) == PRIORITY_LEVELS
    assert rows["workload-low"][1:3] == ["Limited", "100"]


async def test_flow_schema_dangling_follows_its_priority_level(module_api: API) -> None:
    """apf_controller.go presyncFlowSchemaStatus on any FlowSchema: Dangling True/NotFound
    while the named level is missing, False/Found once it exists."""
    schema = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
              "metadata": {"name": "team-a"},
              "spec": {"priorityLevelConfiguration": {"name": "team-a-level"},
                       "matchingPrecedence": 3000,
                       "rules": [{"subjects": [{"kind": "User", "user": {"name": "a"}}],
                                  "nonResourceRules": [{"verbs": ["get"],
                                                        "nonResourceURLs": ["/a"]}]}]}}
    status, out = await module_api.post(f"{FC}/flowschemas", schema)
    assert status == 201, out
    try:
        async def dangling() -> tuple[str, str, str] | None:
            code, live = await module_api.get(f"{FC}/flowschemas/team-a")
            assert code == 200, live
            conditions = (live.get("status") or {}).get("conditions") or []
            return next(((c["status"], c["reason"], c["message"]) for c in conditions
                         if c["type"] == "Dangling"), None)

        message = 'This FlowSchema references the PriorityLevelConfiguration object named ' \
                  '"team-a-level"'
        await wait_for(lambda: _is(dangling, ("True", "NotFound",
                                              f"{message} but there is no such object")))
        status, out = await module_api.post(f"{FC}/prioritylevelconfigurations", {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "team-a-level"},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                                                    "limitResponse": {"type": "Reject"}}}})
        assert status == 201, out
        await wait_for(lambda: _is(dangling, ("False", "Found", f"{message} and it exists")))
    finally:  # the module's other tests list exactly the bootstrap configuration
        for path in ("flowschemas/team-a", "prioritylevelconfigurations/team-a-level"):
            await module_api.delete(f"{FC}/{path}")


async def _is(read: Callable[[], Awaitable[Any]], wanted: Any) -> bool:
    return bool(await read() == wanted)
