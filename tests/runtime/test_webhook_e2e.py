"""End to end: the embedded API server calls the SDK's webhooks, registered with the
configurations and CRDs that ``setpoint.resources._webhooks`` generates, as a real cluster
would call an operator's webhook server."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import Field

from setpoint.client import Client, ForbiddenError, InvalidError, load_kubeconfig
from setpoint.cluster import RunningCluster
from setpoint.resources import CustomResource, Model, crd_for, generate_crds
from setpoint.resources._webhooks import (
    ClientConfig,
    generate_webhook_configurations,
    set_conversion_webhooks,
)
from setpoint.runtime import (
    AdmissionContext,
    Conversion,
    Denied,
    Manager,
    ManagerSettings,
    Webhook,
)
from tests.runtime.test_webhook_support import Memcached
from tests.waiting import wait_for


async def install(client: Client, crd: dict[str, Any], kind: Any) -> None:
    await client.create(crd)

    async def served() -> bool:
        try:
            await client.list(kind, namespace="default")
        except Exception:
            client.discovery.invalidate()
            return False
        return True

    await wait_for(served)


def webhook_manager(cluster: RunningCluster, hooks: list[Any]) -> Manager:
    return Manager(settings=ManagerSettings(webhook_port=0, webhook_generate_certs=True,
                                            graceful_shutdown_timeout=5.0),
                   webhooks=hooks, config=load_kubeconfig(cluster.kubeconfig))


def memcached_hooks(dry_runs: list[bool]) -> Webhook[Memcached]:
    hooks = Webhook.for_(Memcached)

    @hooks.default
    async def default(ctx: AdmissionContext[Memcached], mc: Memcached) -> None:
        mc.spec.topology = mc.spec.topology or "sharded"
        mc.metadata.labels = {**(mc.metadata.labels or {}), "defaulted-by": "webhook"}

    @hooks.validate(operations=("CREATE", "UPDATE", "DELETE"))
    async def validate(ctx: AdmissionContext[Memcached], mc: Memcached, old: Any,
                       operation: str) -> list[str]:
        dry_runs.append(ctx.dry_run)
        if operation == "DELETE":
            if (mc.metadata.labels or {}).get("protected") == "true":
                raise Denied(f"{mc.metadata.name} is protected")
            return []
        if mc.spec.replicas > 64:
            raise Denied("must be at most 64", field="spec.replicas", value=mc.spec.replicas)
        return [] if mc.spec.image else ["no image given: memcached:latest is used"]

    return hooks


async def test_api_server_defaults_validates_and_warns_through_the_sdk_webhooks(
        cluster: RunningCluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    await install(client, crd_for(Memcached), Memcached)
    dry_runs: list[bool] = []
    hooks = memcached_hooks(dry_runs)
    manager = webhook_manager(cluster, [hooks])
    async with manager.running():
        server = manager.webhook_server
        assert server is not None
        for config in generate_webhook_configurations(
                hooks, client=ClientConfig(url=server.url, ca_bundle=server.ca_pem)):
            await client.create(config)

        with caplog.at_level(logging.WARNING, logger="setpoint.client"):
            created: dict[str, Any] = await client.create({
                "apiVersion": "cache.example.com/v1", "kind": "Memcached",
                "metadata": {"name": "m", "namespace": "default",
                             "labels": {"protected": "true"}},
                "spec": {"replicas": 2}})
        assert created["spec"] == {"replicas": 2, "topology": "sharded"}
        assert created["metadata"]["labels"] == {"protected": "true",
                                                 "defaulted-by": "webhook"}
        assert "no image given: memcached:latest is used" in caplog.text

        with pytest.raises(InvalidError) as invalid:
            await client.create({"apiVersion": "cache.example.com/v1", "kind": "Memcached",
                                 "metadata": {"name": "big", "namespace": "default"},
                                 "spec": {"replicas": 100, "image": "memcached:1.6"}})
        assert invalid.value.message == (
            'admission webhook "vmemcached-v1.cache.example.com" denied the request: '
            'Memcached.cache.example.com "big" is invalid: spec.replicas: Invalid value: '
            "100: must be at most 64")
        assert [(c.field, c.reason) for c in invalid.value.causes] == [
            ("spec.replicas", "FieldValueInvalid")]

        await client.create({"apiVersion": "cache.example.com/v1", "kind": "Memcached",
                             "metadata": {"name": "dry", "namespace": "default"},
                             "spec": {"image": "memcached:1.6"}}, dry_run=True)
        assert dry_runs[-1] is True

        with pytest.raises(ForbiddenError) as forbidden:
            await client.delete(Memcached, "m", namespace="default")
        assert forbidden.value.message == (
            'admission webhook "vmemcached-v1.cache.example.com" denied the request: '
            "m is protected")
        assert await client.get(Memcached, "m", namespace="default")


class SpecV1(Model):
    replicas: int = 1


class SpecV2(Model):
    size: int = 1


class ShardV1(CustomResource, group="conv.example.com", version="v1", kind="Shard",
              storage=True):
    spec: SpecV1 = Field(default_factory=SpecV1)


class ShardV2(CustomResource, group="conv.example.com", version="v2", kind="Shard"):
    spec: SpecV2 = Field(default_factory=SpecV2)


async def test_api_server_converts_versions_through_the_sdk_conversion_webhook(
        cluster: RunningCluster, client: Client) -> None:
    conversion = Conversion()
    conversion.register(ShardV1, ShardV2)(
        lambda v1: ShardV2(metadata=v1.metadata, spec=SpecV2(size=v1.spec.replicas)))
    conversion.register(ShardV2, ShardV1)(
        lambda v2: ShardV1(metadata=v2.metadata, spec=SpecV1(replicas=v2.spec.size)))
    manager = webhook_manager(cluster, [conversion])
    async with manager.running():
        server = manager.webhook_server
        assert server is not None
        [crd] = set_conversion_webhooks(
            generate_crds([ShardV1, ShardV2]), conversion,
            client=ClientConfig(url=server.url, ca_bundle=server.ca_pem))
        await install(client, crd, ShardV2)
        await client.create(ShardV2(name="s", namespace="default", spec=SpecV2(size=4)))
        stored = await client.get(ShardV1, "s", namespace="default")
        assert stored.spec.replicas == 4
        again = await client.get(ShardV2, "s", namespace="default")
        assert again.spec.size == 4
        assert again.metadata.uid == stored.metadata.uid
