"""``run_manager`` with webhooks: the test's cluster calls the operator's webhooks."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.client import ApiError, Client, ForbiddenError, Kind
from setpoint.runtime import AdmissionContext, Denied, Manager, Webhook
from setpoint.testing.plugin import ManagerLauncher

CONFIGMAP = Kind("v1", "ConfigMap")
VALIDATING = Kind("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")


def config_map_hooks() -> Webhook[dict[str, Any]]:
    hooks = Webhook.for_(CONFIGMAP)

    @hooks.default
    async def default(ctx: AdmissionContext[dict[str, Any]], cm: dict[str, Any]) -> None:
        cm.setdefault("metadata", {}).setdefault("labels", {})["checked"] = "yes"

    @hooks.validate
    async def validate(ctx: AdmissionContext[dict[str, Any]], cm: dict[str, Any], old: Any,
                       operation: str) -> None:
        if (cm.get("data") or {}).get("forbidden"):
            raise Denied("no forbidden keys")

    return hooks


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": data}


async def test_the_operators_webhooks_serve_the_test_cluster_while_it_runs(
        run_manager: ManagerLauncher, k8s: Client) -> None:
    runner = await run_manager(Manager(webhooks=[config_map_hooks()]))
    created = await k8s.create(cm("a", ok="1"))
    assert created["metadata"]["labels"] == {"checked": "yes"}
    with pytest.raises(ForbiddenError) as denied:
        await k8s.create(cm("b", forbidden="1"))
    assert "no forbidden keys" in denied.value.message

    await runner.crash()
    # as in a cluster: the configurations outlive a crashed operator, and fail its writes
    with pytest.raises(ApiError) as failed:
        await k8s.create(cm("c"))
    assert failed.value.code == 500 and "failed calling webhook" in failed.value.message

    await runner.restart()
    assert (await k8s.create(cm("c")))["metadata"]["labels"] == {"checked": "yes"}

    await runner.stop()
    assert (await k8s.list(VALIDATING)).items == []
    assert "labels" not in (await k8s.create(cm("d")))["metadata"]


async def test_pods_made_by_the_workload_controllers_pass_the_operators_webhook(
        run_manager: ManagerLauncher, k8s: Client, setpoint_workloads: Any,
        wait_for: Any) -> None:
    """A sidecar injector, as operators write them: the ReplicaSet controller's pods (API
    clients like the real ones) are mutated on their way in."""
    pods = Webhook.for_(Kind("v1", "Pod"))

    @pods.default
    async def inject(ctx: AdmissionContext[dict[str, Any]], pod: dict[str, Any]) -> None:
        containers = pod["spec"]["containers"]
        if not any(c["name"] == "sidecar" for c in containers):
            containers.append({"name": "sidecar", "image": "example/sidecar:1"})

    await run_manager(Manager(webhooks=[pods]))
    await k8s.create({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})

    async def containers() -> list[list[str]]:
        listed = (await k8s.list(Kind("v1", "Pod"), label_selector="app=web")).items
        return [[c["name"] for c in p["spec"]["containers"]] for p in listed]

    async def both_created() -> bool:
        return len(await containers()) == 2

    await wait_for(both_created)
    assert await containers() == [["app", "sidecar"], ["app", "sidecar"]]
