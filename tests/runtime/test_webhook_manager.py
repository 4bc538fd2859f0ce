"""The manager runs the webhook server: started before the controllers, on every replica
whatever the leader election says, stopped last, part of readiness and metrics."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import RunningCluster
from setpoint.runtime import AdmissionContext, Denied, Manager, ManagerSettings, Webhook
from tests.runtime.test_webhook_support import Memcached, admit, memcached, review
from tests.runtime.widgets import widget_controller
from tests.waiting import wait_for

CONFIGMAP = Kind("v1", "ConfigMap")
VALIDATE = "/validate-cache-example-com-v1-memcached"
MUTATE = "/mutate-cache-example-com-v1-memcached"


def freezable() -> Webhook[Memcached]:
    """Refuses changes while a ConfigMap ``freeze`` exists in the object's namespace."""
    hooks = Webhook.for_(Memcached)

    @hooks.validate
    async def validate(ctx: AdmissionContext[Memcached], mc: Memcached, old: Any,
                       op: str) -> None:
        assert ctx.client is not None
        names = [cm["metadata"]["name"]
                 for cm in (await ctx.client.list(CONFIGMAP, namespace=ctx.namespace))]
        if "freeze" in names:
            raise Denied(f"namespace {ctx.namespace} is frozen")

    return hooks


def webhook_manager(cluster: RunningCluster, controllers: list[Any], *,
                    webhooks: Sequence[Any] = (), **settings: Any) -> Manager:
    settings.setdefault("webhook_port", 0)
    settings.setdefault("webhook_generate_certs", True)
    settings.setdefault("graceful_shutdown_timeout", 5.0)
    return Manager(controllers, settings=ManagerSettings(**settings), webhooks=webhooks,
                   config=load_kubeconfig(cluster.kubeconfig))


async def fetch(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}{path}") as resp:
        return resp.status, await resp.text()


async def test_manager_serves_webhooks_with_its_client_metrics_and_readiness(
        cluster: RunningCluster, client: Client) -> None:
    manager = webhook_manager(cluster, [], http_port=0)
    manager.add_webhook(freezable())
    async with manager.running():
        server = manager.webhook_server
        assert server is not None and manager.webhook_port == server.port
        assert await fetch(manager.http_port or 0, "/readyz") == (200, "ok")
        assert (await admit(server, VALIDATE, review("CREATE", memcached())))["allowed"]
        await client.create({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "freeze", "namespace": "default"}})
        frozen = await admit(server, VALIDATE, review("CREATE", memcached()))
        assert frozen["status"]["message"] == "namespace default is frozen"
        _, text = await fetch(manager.http_port or 0, "/metrics")
        assert (f'controller_runtime_webhook_requests_total{{code="200",webhook="{VALIDATE}"}}'
                f" 2.0") in text
    assert not server.serving


async def test_webhooks_added_after_start_are_served(cluster: RunningCluster) -> None:
    manager = webhook_manager(cluster, [], webhooks=[freezable()])
    async with manager.running():
        hooks = Webhook.for_(Memcached)
        hooks.default(lambda ctx, mc: None)
        manager.add_webhook(hooks)
        assert manager.webhook_server is not None
        assert manager.webhook_server.paths == [MUTATE, VALIDATE]
        response = await admit(manager.webhook_server, MUTATE, review("CREATE", memcached()))
        assert response["allowed"] is True


@pytest.mark.usefixtures("widgets_crd")
async def test_a_standby_replica_serves_webhooks_too(cluster: RunningCluster) -> None:
    def replica(who: str) -> Manager:
        return webhook_manager(
            cluster, [widget_controller()], webhooks=[freezable()], leader_election=True,
            leader_election_id="webhooks-leader", identity=who, lease_duration=5.0,
            renew_deadline=4.0, retry_period=0.1)

    leader, standby = replica("leader"), replica("standby")
    async with leader.running():
        await wait_for(lambda: leader.leader)
        async with standby.running():
            assert not standby.leader
            assert standby.webhook_server is not None
            response = await admit(standby.webhook_server, VALIDATE,
                                   review("CREATE", memcached()))
            assert response["allowed"] is True


async def test_manager_without_certificates_fails_to_start_and_cleans_up(
        cluster: RunningCluster, tmp_path: Path) -> None:
    manager = webhook_manager(cluster, [widget_controller()], webhooks=[freezable()],
                              webhook_cert_dir=str(tmp_path), webhook_generate_certs=False)
    with pytest.raises(FileNotFoundError, match=r"tls\.crt"):
        await manager.start()
    assert not manager.ready
    await manager.wait()


def test_manager_refuses_what_is_not_a_webhook() -> None:
    with pytest.raises(TypeError, match="not a webhook"):
        Manager(webhooks=[object()])
