"""The RouteMonitor controller: resolves the URL to probe, deploys the blackbox exporter,
writes the ServiceMonitor and the burn-rate PrometheusRule, and records in the status the
URL, the objects and the result of a probe it asks the exporter for (every
``spec.interval``, as often as Prometheus probes).

The URL of a Service target is ``http://<service>.<namespace>.svc:<port><path>`` (a named
port is looked up in the Service); of an Ingress ``https://<host><path>`` when its TLS
section lists the host, else ``http://``; a URL target gets the path appended.
"""

from __future__ import annotations

from datetime import UTC, datetime

from operators.monitoring import blackbox, podparts, serverapi
from operators.monitoring.resources.prometheusrule import PrometheusRule
from operators.monitoring.resources.routemonitor import RouteMonitor
from operators.monitoring.resources.servicemonitor import ServiceMonitor
from setpoint.resources.models.apps_v1 import Deployment
from setpoint.resources.models.core_v1 import ConfigMap, Pod, Service
from setpoint.resources.models.networking_v1 import Ingress
from setpoint.runtime import Context, Controller, Result

routemonitor = (Controller.for_(RouteMonitor, name="routemonitor")
                .owns(Deployment, Service, ConfigMap, ServiceMonitor, PrometheusRule)
                .reads(Pod, Ingress))


def target_url(ctx: Context[RouteMonitor], rm: RouteMonitor) -> tuple[str | None, str]:
    """(the URL, or None and why it cannot be known yet)."""
    target, path = rm.spec.target, rm.spec.path
    if target.url is not None:
        return target.url.rstrip("/") + path, ""
    namespace = str(rm.metadata.namespace)
    if target.service is not None:
        port: int | str | None = target.service.port
        if isinstance(port, str):
            service = ctx.get(Service, target.service.name)
            if service is None:
                return None, f"Service {target.service.name} does not exist"
            found = [p.port for p in (service.spec.ports if service.spec else None) or ()
                     if p.name == port]
            if not found:
                return None, f"Service {target.service.name} has no port named {port}"
            port = found[0]
        return f"http://{target.service.name}.{namespace}.svc:{port}{path}", ""
    assert target.ingress is not None
    ingress = ctx.get(Ingress, target.ingress.name)
    rules = (ingress.spec.rules if ingress and ingress.spec else None) or []
    host = next((r.host for r in rules if r.host), None)
    if host is None:
        return None, f"Ingress {target.ingress.name} has no rule with a host"
    tls = any(host in (t.hosts or ()) for t in (ingress.spec.tls or ())) \
        if ingress and ingress.spec else False
    return f"{'https' if tls else 'http'}://{host}{path}", ""


@routemonitor.reconcile
async def reconcile(ctx: Context[RouteMonitor], rm: RouteMonitor) -> Result:
    if ctx.deleting:
        return Result()
    status = rm.status
    status.observed_generation = rm.metadata.generation
    url, why = target_url(ctx, rm)
    if url is None:
        ctx.set_condition("Reconciled", False, reason="TargetNotFound", message=why, obj=rm)
        await ctx.update_status(rm)
        return Result(requeue_after=blackbox.interval_seconds(rm))
    await ctx.apply(blackbox.config_map(rm))
    exporter = await ctx.apply(blackbox.deployment(rm))
    await ctx.apply(blackbox.service(rm))
    monitor = await ctx.apply(blackbox.service_monitor(rm, url))
    rule = await ctx.apply(blackbox.prometheus_rule(rm, url))
    if status.url != url:
        ctx.events.normal("Probing", f"probing {url} with module {blackbox.module(rm)}",
                          action="Probe")
    status.url = url
    status.exporter = str(exporter.metadata.name)
    status.service_monitor = str(monitor.metadata.name)
    status.prometheus_rule = str(rule.metadata.name)
    ctx.set_condition("Reconciled", True, reason="ObjectsWritten",
                      message=f"exporter, ServiceMonitor and PrometheusRule for {url}", obj=rm)
    pods = podparts.ready_ips(ctx.list(Pod, labels=blackbox.selector(rm)))
    if not pods:
        ctx.set_condition("Available", False, reason="ExporterNotReady",
                          message="the blackbox exporter is not ready", obj=rm)
    for ip in pods[:1]:
        success = await serverapi.probe_success(f"{ip}:{blackbox.PORT}",
                                                blackbox.module(rm), url)
        if success is not None:
            status.last_probe_success = success
            status.last_probe_time = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ctx.set_condition("Available", True, reason="Probing",
                          message=f"the last probe of {url} "
                          f"{'succeeded' if success else 'failed'}", obj=rm)
    await ctx.update_status(rm)
    return Result(requeue_after=blackbox.interval_seconds(rm))
