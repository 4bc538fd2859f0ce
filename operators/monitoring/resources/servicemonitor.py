"""``ServiceMonitor``: which Services' endpoints a Prometheus scrapes (the
prometheus-operator's ``monitoring.coreos.com/v1`` shape, the fields most used)::

    apiVersion: monitoring.setpoint.dev/v1
    kind: ServiceMonitor
    metadata: {name: web, labels: {team: web}}
    spec:
      selector: {matchLabels: {app: web}}
      endpoints: [{port: web, interval: 15s, path: /metrics}]
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from operators.monitoring.resources.common import (
    DURATION,
    GROUP,
    VERSION,
    ConfigResourceStatus,
    NamespaceSelector,
)
from setpoint.resources import CustomResource, IntOrString, Model
from setpoint.resources.models.meta_v1 import LabelSelector


class Endpoint(Model):
    """One scraped port of the selected Services' endpoints."""

    port: str | None = Field(None, description="The Service port's name.")
    target_port: IntOrString | None = Field(
        None, description="The pods' port (name or number), when no Service port is named.")
    path: str | None = Field(None, description="The HTTP path (default /metrics).")
    scheme: Literal["http", "https"] | None = Field(None, description="http or https.")
    params: dict[str, list[str]] | None = Field(None, description="URL parameters.")
    interval: str | None = Field(None, pattern=DURATION,
                                 description="The scrape interval (default the global one).")
    scrape_timeout: str | None = Field(None, pattern=DURATION,
                                       description="The scrape timeout.")
    honor_labels: bool | None = Field(None, description="Keep the target's labels on "
                                      "conflicts.")
    relabelings: list[dict[str, Any]] | None = Field(
        None, description="Prometheus relabel_configs applied before the scrape.")
    metric_relabelings: list[dict[str, Any]] | None = Field(
        None, description="Prometheus metric_relabel_configs applied to scraped samples.")


class ServiceMonitorSpec(Model):
    """The Services to select and the endpoints to scrape."""

    selector: LabelSelector = Field(default_factory=LabelSelector,
                                    description="The Services' labels.")
    namespace_selector: NamespaceSelector | None = Field(
        None, description="The Services' namespaces (default: the ServiceMonitor's).")
    endpoints: list[Endpoint] = Field(default_factory=list,
                                      description="The endpoints to scrape.")
    job_label: str | None = Field(None, description="The Service label whose value names "
                                  "the job (default: the Service's name).")
    target_labels: list[str] | None = Field(None, description="Service labels copied onto "
                                            "the targets.")
    pod_target_labels: list[str] | None = Field(None, description="Pod labels copied onto "
                                                "the targets.")
    sample_limit: int | None = Field(None, ge=0, description="Per-scrape sample limit.")


class ServiceMonitor(CustomResource, group=GROUP, version=VERSION, short_names=["smon"],
                     categories=["prometheus-operator"]):
    """Targets for the Prometheus objects whose serviceMonitorSelector selects it."""

    spec: ServiceMonitorSpec = Field(default_factory=ServiceMonitorSpec)
    status: ConfigResourceStatus = ConfigResourceStatus()
