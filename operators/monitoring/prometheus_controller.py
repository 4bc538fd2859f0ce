"""The Prometheus controller. Each reconcile:

1. gathers what the Prometheus selects (ServiceMonitors and their Services' Endpoints,
   PrometheusRules, Alertmanagers, federated Prometheus servers) from the cache;
2. renders the configuration and rule files and validates them
   (:mod:`operators.monitoring.validation`); an invalid result is **not written**: the
   running servers keep the last good configuration and ``Reconciled`` says why;
3. writes the rule ConfigMaps and the configuration Secret, then the Service and the
   StatefulSet; the reloader in each pod sees the new files and POSTs ``/-/reload``;
4. reads the targets a ready server reports and writes the status, and polls again
   after :data:`POLL_SECONDS` (targets come and go without an event of ours), or after
   the scrape interval when that is shorter and the server has not yet scraped every
   target it was given (its first scrapes come within an interval: the status says
   what they found as soon as it can be known);
5. in either case, writes the bindings of the ServiceMonitors and PrometheusRules to this
   Prometheus, with whether it accepted them (:mod:`operators.monitoring.bindings`).

A Prometheus carries the finalizer :data:`STATUS_CLEANUP` (the prometheus-operator's
``monitoring.coreos.com/status-cleanup``, pkg/k8s/finalizer.go, set when status bindings
are on): a deleted Prometheus is kept until its bindings are taken out of every
ServiceMonitor and PrometheusRule, so that no object says a gone server accepted it (the
last Prometheus has no other reconcile that would drop them).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from operators.monitoring import (
    bindings,
    discovery,
    podparts,
    prometheus_objects,
    serverapi,
    storage,
)
from operators.monitoring.known import Known
from operators.monitoring.promconfig import Selection, build, digest, render
from operators.monitoring.resources.alertmanager import Alertmanager
from operators.monitoring.resources.common import GROUP, duration_seconds
from operators.monitoring.resources.prometheus import Prometheus, ScrapeTarget
from operators.monitoring.resources.prometheusrule import PrometheusRule
from operators.monitoring.resources.servicemonitor import ServiceMonitor
from operators.monitoring.rulefiles import shards
from operators.monitoring.validation import errors
from setpoint.resources.models.apps_v1 import StatefulSet
from setpoint.resources.models.core_v1 import (
    ConfigMap,
    Endpoints,
    Namespace,
    Pod,
    Secret,
    Service,
)
from setpoint.runtime import Context, Controller, Result

POLL_SECONDS = 15.0
STATUS_CLEANUP = f"{GROUP}/status-cleanup"
known = Known()
_verdicts: OrderedDict[str, str | None] = OrderedDict()
"""Validation results by configuration digest (promtool runs once per content)."""

prometheus = (Controller.for_(Prometheus, name="prometheus")
              .owns(StatefulSet, Service, Secret, ConfigMap)
              .watches(ServiceMonitor, map_func=known.all)
              .watches(PrometheusRule, map_func=known.all)
              .watches(Endpoints, map_func=known.all)
              .watches(Namespace, map_func=known.all)
              .reads(Pod, Alertmanager)
              # the bindings in the status of what it selects
              .permits({"apiGroups": [GROUP], "resources": ["servicemonitors/status",
                                                            "prometheusrules/status"],
                        "verbs": ["get", "update", "patch"]}))


def gather(ctx: Context[Prometheus], prom: Prometheus) -> tuple[Selection,
                                                                   list[PrometheusRule]]:
    spec, own = prom.spec, str(prom.metadata.namespace)
    namespaces = ctx.list(Namespace, all_namespaces=True)
    names = [str(n.metadata.name) for n in namespaces]
    selection = Selection()
    monitor_ns = discovery.namespaces_selected(spec.service_monitor_namespace_selector, own,
                                               namespaces)
    services = ctx.list(Service, all_namespaces=True)
    for monitor in discovery.select(ctx.list(ServiceMonitor, all_namespaces=True),
                                    spec.service_monitor_selector, monitor_ns):
        where = discovery.monitor_namespaces(monitor.spec.namespace_selector,
                                             str(monitor.metadata.namespace), names)
        chosen = discovery.select(services, monitor.spec.selector, where)
        selection.monitors.append((monitor, [
            (s, ctx.get(Endpoints, str(s.metadata.name), str(s.metadata.namespace)))
            for s in chosen]))
    rule_ns = discovery.namespaces_selected(spec.rule_namespace_selector, own, namespaces)
    rules = discovery.select(ctx.list(PrometheusRule, all_namespaces=True),
                             spec.rule_selector, rule_ns)
    for endpoint in (spec.alerting.alertmanagers if spec.alerting else ()):
        namespace = endpoint.namespace or own
        service = ctx.get(Service, endpoint.name, namespace) or \
            ctx.get(Service, f"alertmanager-{endpoint.name}", namespace)
        addresses = discovery.endpoint_addresses(
            ctx.get(Endpoints, str(service.metadata.name), namespace) if service else None,
            endpoint.port)
        selection.alertmanagers.append((endpoint, addresses))
    for source in spec.federation or ():
        namespace = source.namespace or own
        endpoints = ctx.get(Endpoints, f"prometheus-{source.name}", namespace)
        selection.federation.append((source, namespace,
                                     discovery.endpoint_addresses(endpoints, "web")))
    return selection, rules


async def validated(key: str, config: str, files: dict[str, str]) -> str | None:
    if key not in _verdicts:
        _verdicts[key] = await errors(config, files)
        while len(_verdicts) > 256:
            _verdicts.popitem(last=False)
    return _verdicts[key]


@prometheus.reconcile
async def reconcile(ctx: Context[Prometheus], prom: Prometheus) -> Result:
    namespace, name = str(prom.metadata.namespace), str(prom.metadata.name)
    known.add(namespace, name)
    if ctx.deleting:
        known.discard(namespace, name)
        await record_bindings(ctx, prom, [], [], None, None)
        await ctx.remove_finalizer(STATUS_CLEANUP)
        return Result()  # the garbage collector removes what it owns
    await ctx.add_finalizer(STATUS_CLEANUP)
    selection, rules = gather(ctx, prom)
    rule_data = shards(rules)
    selection.rule_config_maps = [prometheus_objects.rule_config_map_name(prom, i)
                                  for i in range(len(rule_data))]
    built = build(prom, selection)
    config = render(built)
    files = {k: v for shard in rule_data for k, v in shard.items()}
    key = digest(config, *(f"{k}\n{v}" for k, v in sorted(files.items())))
    problem = await validated(key, config, files)
    await record_bindings(ctx, prom, [m for m, _ in selection.monitors], rules, key, problem)
    if problem is not None:
        previous = ctx.get_condition("Reconciled", obj=prom) or {}
        if problem not in str(previous.get("message", "")):
            ctx.events.warning("InvalidConfiguration", problem[:1000], action="Validate")
        ctx.set_condition("Reconciled", False, reason="InvalidConfiguration",
                          message=f"not rolled out (the servers keep configuration "
                          f"{prom.status.configuration_hash}): {problem}", obj=prom)
        prom.status.observed_generation = prom.metadata.generation
        await ctx.update_status(prom)
        return Result(requeue_after=POLL_SECONDS)

    for index, data in enumerate(rule_data):
        await ctx.apply(prometheus_objects.rule_config_map(prom, index, data))
    await prune_rule_config_maps(ctx, prom, set(selection.rule_config_maps))
    await ctx.apply(prometheus_objects.config_secret(prom, config))
    await ctx.apply(prometheus_objects.service(prom))
    derived = storage.derive(prom.spec)
    statefulset = await ctx.apply(prometheus_objects.statefulset(
        prom, derived, selection.rule_config_maps))
    if prom.status.configuration_hash != key:
        ctx.events.normal("ConfigurationChanged", f"configuration {key}: "
                          f"{len(config.splitlines())} lines, {len(files)} rule file(s)",
                          action="Reload")
    if await record_status(ctx, prom, statefulset, key, configured_targets(built)):
        return Result(requeue_after=min(POLL_SECONDS, max(
            1.0, duration_seconds(prom.spec.scrape_interval))))
    return Result(requeue_after=POLL_SECONDS)


def configured_targets(config: dict[str, Any]) -> int:
    return sum(len(group.get("targets") or ()) for job in config.get("scrape_configs") or ()
               for group in job.get("static_configs") or ())


async def record_bindings(ctx: Context[Prometheus], prom: Prometheus,
                          monitors: list[ServiceMonitor], rules: list[PrometheusRule],
                          key: str | None, problem: str | None) -> None:
    workload = (str(prom.metadata.namespace), str(prom.metadata.name))
    live = {(str(p.metadata.namespace), str(p.metadata.name))
            for p in ctx.list(Prometheus, all_namespaces=True)
            if not p.metadata.deletion_timestamp}
    if ctx.deleting:
        live.discard(workload)
    await bindings.record(ctx, workload, ctx.list(ServiceMonitor, all_namespaces=True),
                          monitors, key, problem, live)
    await bindings.record(ctx, workload, ctx.list(PrometheusRule, all_namespaces=True),
                          rules, key, problem, live)


async def prune_rule_config_maps(ctx: Context[Prometheus], prom: Prometheus,
                                 keep: set[str]) -> None:
    prefix = f"{prometheus_objects.name_of(prom)}-rulefiles-"
    for config_map in ctx.owned(ConfigMap):
        name = str(config_map.metadata.name)
        if name.startswith(prefix) and name not in keep \
                and not config_map.metadata.deletion_timestamp:
            await ctx.delete(config_map)


async def record_status(ctx: Context[Prometheus], prom: Prometheus,
                        statefulset: StatefulSet, key: str, configured: int) -> bool:
    """Write the status; True when a ready server answers that it has not yet scraped
    all the ``configured`` targets (it reports fewer, or one whose health is unknown)."""
    status = prom.status
    pending = False
    status.observed_generation = prom.metadata.generation
    status.configuration_hash = key
    status.selector = podparts.selector_string(prometheus_objects.selector(prom))
    sts = statefulset.status
    status.replicas = (sts.replicas or 0) if sts else 0
    status.available_replicas = (sts.available_replicas or sts.ready_replicas or 0) \
        if sts else 0
    pods = podparts.ready_ips(ctx.list(Pod, labels=prometheus_objects.selector(prom)))
    for ip in pods[:1]:
        targets = await serverapi.prometheus_targets(f"{ip}:{prometheus_objects.PORT}")
        if targets is not None:
            pending = len(targets) < configured or \
                any(t["health"] == "unknown" for t in targets)
            status.targets = [ScrapeTarget.model_validate(t) for t in targets]
            status.targets_up = sum(t["health"] == "up" for t in targets)
            status.targets_down = sum(t["health"] == "down" for t in targets)
    ctx.set_condition("Reconciled", True, reason="ConfigurationAccepted",
                      message=f"configuration {key} written", obj=prom)
    wanted = prom.spec.replicas
    if wanted == 0:
        ctx.set_condition("Available", False, reason="ScaledToZero", message="", obj=prom)
    elif not pods:
        ctx.set_condition("Available", False, reason="NoServerReady",
                          message=f"none of the {wanted} Prometheus pods is ready", obj=prom)
    else:
        ctx.set_condition("Available", True, reason="ServersReady" if len(pods) >= wanted
                          else "SomeServersReady",
                          message=f"{len(pods)}/{wanted} Prometheus pods ready", obj=prom)
    await ctx.update_status(prom)
    return pending
