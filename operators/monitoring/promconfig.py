"""The Prometheus configuration file of a ``Prometheus``, from what it selects.

Job names follow the prometheus-operator (``serviceMonitor/<ns>/<name>/<i>``, one job per
ServiceMonitor endpoint), so dashboards and alerts written for it keep working; federation
jobs are ``federate/<ns>/<name>``. Relabelings are written in the prometheus-operator's
camelCase (``sourceLabels``) and converted to the configuration's snake_case.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from operators.monitoring.discovery import TargetGroup, service_targets
from operators.monitoring.resources.prometheus import (
    AlertmanagerEndpoints,
    FederationSource,
    Prometheus,
)
from operators.monitoring.resources.servicemonitor import ServiceMonitor
from setpoint.resources.models.core_v1 import Endpoints, Service

CONFIG_DIR = "/etc/prometheus/config_out"
CONFIG_KEY = "prometheus.yaml"
RULES_DIR = "/etc/prometheus/rules"


@dataclass
class Selection:
    """What one Prometheus selects, gathered by the controller from the cache."""

    monitors: list[tuple[ServiceMonitor, list[tuple[Service, Endpoints | None]]]] = \
        field(default_factory=list)
    alertmanagers: list[tuple[AlertmanagerEndpoints, list[str]]] = field(default_factory=list)
    federation: list[tuple[FederationSource, str, list[str]]] = field(default_factory=list)
    """(source, its namespace, the federated servers' addresses)."""
    rule_config_maps: list[str] = field(default_factory=list)


def snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def relabel_configs(items: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """prometheus-operator RelabelConfigs (camelCase) as Prometheus ``relabel_configs``."""
    return [{snake(k): v for k, v in item.items()} for item in items or ()]


def monitor_jobs(monitor: ServiceMonitor, services: list[tuple[Service, Endpoints | None]],
                 scrape_interval: str) -> list[dict[str, Any]]:
    jobs = []
    spec = monitor.spec
    for index, endpoint in enumerate(spec.endpoints):
        groups: list[TargetGroup] = []
        for service, endpoints in services:
            groups += service_targets(service, endpoints, endpoint, spec.job_label,
                                      spec.target_labels or ())
        job: dict[str, Any] = {
            "job_name": f"serviceMonitor/{monitor.metadata.namespace}/"
                        f"{monitor.metadata.name}/{index}",
            "honor_labels": bool(endpoint.honor_labels),
            "scrape_interval": endpoint.interval or scrape_interval,
            "metrics_path": endpoint.path or "/metrics",
            "scheme": endpoint.scheme or "http",
            "static_configs": [g.to_config() for g in groups],
        }
        if endpoint.scrape_timeout:
            job["scrape_timeout"] = endpoint.scrape_timeout
        if endpoint.params:
            job["params"] = endpoint.params
        if spec.sample_limit:
            job["sample_limit"] = spec.sample_limit
        if endpoint.relabelings:
            job["relabel_configs"] = relabel_configs(endpoint.relabelings)
        if endpoint.metric_relabelings:
            job["metric_relabel_configs"] = relabel_configs(endpoint.metric_relabelings)
        jobs.append(job)
    return jobs


def federation_job(source: FederationSource, namespace: str, addresses: list[str],
                   scrape_interval: str) -> dict[str, Any]:
    """Scrape another Prometheus' ``/federate`` with its series' own labels kept."""
    return {"job_name": f"federate/{namespace}/{source.name}", "honor_labels": True,
            "metrics_path": "/federate", "scrape_interval": source.interval or scrape_interval,
            "params": {"match[]": list(source.match)},
            "static_configs": [{"targets": addresses,
                                "labels": {"federated": f"{namespace}/{source.name}"}}]}


def alerting(alertmanagers: list[tuple[AlertmanagerEndpoints, list[str]]]) -> dict[str, Any]:
    configs = []
    for endpoint, addresses in alertmanagers:
        entry: dict[str, Any] = {"api_version": endpoint.api_version or "v2",
                                 "scheme": endpoint.scheme or "http",
                                 "static_configs": [{"targets": addresses}]}
        if endpoint.path_prefix:
            entry["path_prefix"] = endpoint.path_prefix
        configs.append(entry)
    return {"alertmanagers": configs}


def build(prometheus: Prometheus, selection: Selection) -> dict[str, Any]:
    """The whole configuration, as a mapping (see :func:`render`)."""
    spec = prometheus.spec
    namespace = str(prometheus.metadata.namespace)
    external = {"prometheus": f"{namespace}/{prometheus.metadata.name}",
                **(spec.external_labels or {})}
    config: dict[str, Any] = {
        "global": {"scrape_interval": spec.scrape_interval,
                   "evaluation_interval": spec.evaluation_interval,
                   "external_labels": external},
        "rule_files": [f"{RULES_DIR}/{name}/*.yaml" for name in selection.rule_config_maps],
        "scrape_configs": [],
    }
    for monitor, services in selection.monitors:
        config["scrape_configs"] += monitor_jobs(monitor, services, spec.scrape_interval)
    for source, source_namespace, addresses in selection.federation:
        config["scrape_configs"].append(federation_job(source, source_namespace, addresses,
                                                       spec.scrape_interval))
    if selection.alertmanagers:
        config["alerting"] = alerting(selection.alertmanagers)
    if spec.remote_write:
        config["remote_write"] = [
            {k: v for k, v in {"url": rw.url, "name": rw.name,
                               "remote_timeout": rw.remote_timeout,
                               "write_relabel_configs": relabel_configs(
                                   rw.write_relabel_configs) or None}.items()
             if v is not None} for rw in spec.remote_write]
    return config


def render(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def digest(*texts: str) -> str:
    """A short hash of the configuration and its rule files: names what runs."""
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode())
        h.update(b"\0")
    return h.hexdigest()[:10]
