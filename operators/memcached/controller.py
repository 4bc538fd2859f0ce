"""The Memcached controller: for Memcached, owns what it creates, follows its pods.

Every reconcile reads the world from the cache and states the whole of what should exist;
``ctx.apply`` sends only what differs. In one pass it:

1. applies the backends (headless Service and StatefulSet);
2. reads the backend pods and renders the mcrouter configuration of the ready ones;
3. makes sure the ConfigMap of that configuration exists with exactly that content
   (verified, not assumed: a ConfigMap found with other content is replaced);
4. points the proxy Deployment at it (a new configuration is a new pod template, so the
   proxies roll) and applies the client Service;
5. deletes configurations older than the previous one;
6. records an event when the configuration changed, and writes the status.

A pod becoming ready or not, or coming back with a new IP, changes the configuration and
the rollout within that same reconcile. Deleting the Memcached deletes everything through
owner references (the garbage collector); no finalizer is needed.
"""

from __future__ import annotations

from typing import Any

from operators.memcached import health, objects
from operators.memcached.mcrouter import build_config, render, servers_of
from operators.memcached.pods import BackendPods, pod_problems, read_backends
from operators.memcached.resource import Memcached
from setpoint.resources.models.apps_v1 import Deployment, StatefulSet
from setpoint.resources.models.core_v1 import ConfigMap, Pod, Service
from setpoint.runtime import Context, Controller, Result

memcached = (Controller.for_(Memcached, name="memcached")
             .owns(StatefulSet, Service, Deployment, ConfigMap)
             .watches(Pod, map_to_owner_by_label=objects.INSTANCE))


@memcached.reconcile
async def reconcile(ctx: Context[Memcached], mc: Memcached) -> Result:
    if ctx.deleting:
        return Result()  # the garbage collector removes what it owns
    await ctx.apply(objects.headless_service(mc))
    statefulset = await ctx.apply(objects.statefulset(mc))

    pods = ctx.list(Pod, labels=objects.backend_selector(mc))
    backends = read_backends(pods, objects.backend_name(mc), mc.spec.replicas)
    config = build_config(backends.ready, mc.spec.topology, mc.spec.replicas_per_shard)
    text = render(config)
    configuration = await ensure_configuration(ctx, mc, text)

    deployment = await ctx.apply(objects.proxy_deployment(mc, configuration))
    await ctx.apply(objects.proxy_service(mc))

    previous = mc.status.configuration
    if previous is not None and previous != configuration:
        mc.status.previous_configuration = previous
    await prune_configurations(ctx, mc, keep={configuration,
                                              mc.status.previous_configuration})
    if previous != configuration:
        servers = servers_of(config)
        ctx.events.normal(
            "ConfigurationChanged",
            f"mcrouter configuration {configuration} routes to {len(servers)} backend(s) "
            f"({', '.join(servers) or 'none'}); rolling out Deployment {deployment.metadata.name}",
            action="RollOutProxy")

    proxy_pods = ctx.list(Pod, labels=objects.proxy_selector(mc))
    record_status(ctx, mc, backends, statefulset, deployment, proxy_pods, config, configuration)
    await ctx.update_status(mc)
    return Result()


def record_status(ctx: Context[Memcached], mc: Memcached, backends: BackendPods,
                  statefulset: StatefulSet, deployment: Deployment, proxy_pods: list[Pod],
                  config: dict[str, Any], configuration: str) -> None:
    """Set ``mc.status`` (in memory) from what this reconcile saw and wrote."""
    status = mc.status
    generation = mc.metadata.generation
    status.observed_generation = generation
    status.replicas = backends.existing
    status.ready_replicas = backends.ready_count
    status.selector = objects.selector_string(objects.backend_selector(mc))
    status.backends = servers_of(config)
    status.configuration = configuration
    status.proxy_ready_replicas = (deployment.status.ready_replicas or 0) \
        if deployment.status is not None else 0
    for type_, verdict in (
            ("Available", health.available(mc, backends, deployment)),
            ("Progressing", health.progressing(mc, backends, statefulset, deployment,
                                               configuration)),
            ("Degraded", health.degraded(backends, pod_problems(proxy_pods)))):
        ctx.set_condition(type_, verdict.status, reason=verdict.reason,
                          message=verdict.message, obj=mc)


async def ensure_configuration(ctx: Context[Memcached], mc: Memcached, text: str) -> str:
    """The name of the ConfigMap holding ``text``, created if missing. Its name is the
    hash of its content, so an existing one is reused; one with other content (edited
    before it was made immutable, or replaced by hand) is deleted and made again."""
    wanted = objects.config_map(mc, text)
    name = str(wanted.metadata.name)
    current: ConfigMap | None = ctx.get(ConfigMap, name)
    if current is not None and (current.data or {}) != wanted.data:
        ctx.log.warning("configuration_replaced", configmap=name)
        await ctx.delete(current)
    await ctx.apply(wanted)
    return name


async def prune_configurations(ctx: Context[Memcached], mc: Memcached,
                               keep: set[str | None]) -> None:
    """Delete the Memcached's configurations other than ``keep`` (the current and the
    previous one: proxies still rolling out may mount the previous one)."""
    selector = objects.config_selector(mc)
    for config_map in ctx.owned(ConfigMap):
        labels = config_map.metadata.labels or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        if config_map.metadata.name not in keep and not config_map.metadata.deletion_timestamp:
            await ctx.delete(config_map)
