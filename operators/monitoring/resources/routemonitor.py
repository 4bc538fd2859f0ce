"""``RouteMonitor``: probe a URL and alert on its availability SLO's burn rate::

    apiVersion: monitoring.setpoint.dev/v1
    kind: RouteMonitor
    metadata: {name: shop}
    spec:
      target: {service: {name: shop, port: 80}}     # or {ingress: {name}} or {url}
      path: /healthz
      interval: 30s              # how often it is probed (the default)
      slo: {targetAvailabilityPercent: "99.5"}
      labels: {team: web}        # on the ServiceMonitor and PrometheusRule, for selectors
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from operators.monitoring.resources.common import GROUP, VERSION, MonitoringStatus
from setpoint.resources import CustomResource, IntOrString, Model, Rule, rules

BLACKBOX_IMAGE = "quay.io/prometheus/blackbox-exporter:v0.23.0"


class ServiceTarget(Model):
    name: str = Field(..., min_length=1)
    port: IntOrString = Field(80, description="The Service port (number or name).")


class IngressTarget(Model):
    name: str = Field(..., min_length=1, description="The Ingress; its first rule's host.")


@rules(Rule("[has(self.url), has(self.service), has(self.ingress)]"
            ".filter(x, x).size() == 1",
            message="exactly one of url, service and ingress"))
class RouteTarget(Model):
    url: str | None = Field(None, pattern=r"^https?://", description="A URL.")
    service: ServiceTarget | None = None
    ingress: IngressTarget | None = None


class SLO(Model):
    target_availability_percent: Annotated[str, Rule(
        "double(self) > 90.0 && double(self) < 100.0",
        message="targetAvailabilityPercent must be strictly between 90 and 100")] = Field(
        ..., pattern=r"^[0-9]{2,3}(\.[0-9]+)?$",
        description="The availability objective, strictly between 90 and 100 (\"99.5\").")


class RouteMonitorSpec(Model):
    target: RouteTarget
    path: str = Field("/", pattern=r"^/", description="The path probed.")
    slo: SLO
    interval: str = Field(
        "30s", pattern=r"^(([1-9][0-9]?|[12][0-9]{2}|300)s|[1-5]m)$",
        description="How often the URL is probed, 1s to 5m (the burn-rate rules count "
        "the probes expected at this interval, so the 5m window always holds one).")
    insecure_skip_tls_verify: bool = Field(False, description="Probe with the "
                                           "insecure_http_2xx module (no TLS checks).")
    labels: dict[str, str] | None = Field(None, description="Labels of the generated "
                                          "ServiceMonitor and PrometheusRule.")
    blackbox_image: str = Field(BLACKBOX_IMAGE, description="The blackbox exporter image.")


class RouteMonitorStatus(MonitoringStatus):
    url: str | None = Field(None, description="The URL probed.")
    service_monitor: str | None = None
    prometheus_rule: str | None = None
    exporter: str | None = Field(None, description="The blackbox exporter's Deployment.")
    last_probe_success: bool | None = Field(None, description="The last probe's result.")
    last_probe_time: str | None = None


class RouteMonitor(CustomResource, group=GROUP, version=VERSION, short_names=["rmo"]):
    """A probed URL with multiwindow, multi-burn-rate alerts on its availability SLO."""

    spec: RouteMonitorSpec
    status: RouteMonitorStatus = RouteMonitorStatus()
