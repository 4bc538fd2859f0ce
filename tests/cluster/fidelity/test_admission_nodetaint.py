"""TaintNodesByCondition over real HTTP (plugin/pkg/admission/nodetaint/admission.go): a
created Node carries ``node.kubernetes.io/not-ready:NoSchedule`` until the node lifecycle
controller lifts it; an update does not add it again."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

NODES = "/api/v1/nodes"
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


async def test_a_created_node_is_tainted_not_ready_once(module_api: API) -> None:
    status, node = await module_api.post(NODES, {"metadata": {"name": "taint-new"}})
    assert status == 201, node
    assert node["spec"]["taints"] == [NOT_READY]
    own = {"key": "example.com/gpu", "value": "yes", "effect": "NoSchedule"}
    status, node = await module_api.post(NODES, {"metadata": {"name": "taint-own"},
                                                 "spec": {"taints": [own]}})
    assert status == 201 and node["spec"]["taints"] == [own, NOT_READY]
    # a taint of that key and effect, whatever its value, is the taint already there
    valued = {**NOT_READY, "value": "x"}
    status, node = await module_api.post(NODES, {"metadata": {"name": "taint-has"},
                                                 "spec": {"taints": [valued]}})
    assert status == 201 and node["spec"]["taints"] == [valued]
    status, node = await module_api.patch(f"{NODES}/taint-new",
                                          {"spec": {"taints": None}},
                                          "application/merge-patch+json")
    assert status == 200 and "taints" not in node["spec"]
