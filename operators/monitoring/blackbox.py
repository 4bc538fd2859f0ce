"""The objects a ``RouteMonitor`` named ``r`` owns:

- ``ConfigMap r-blackbox-exporter``: the exporter's modules ``http_2xx`` and
  ``insecure_http_2xx`` (the same probe without TLS verification);
- ``Deployment r-blackbox-exporter`` and its ``Service`` (port ``http``, 9115);
- ``ServiceMonitor r``: Prometheus scrapes ``/probe?module=…&target=<url>`` on the
  exporter every ``spec.interval`` (30 s; the burn-rate rules count probes at it);
- ``PrometheusRule r``: the burn-rate alerts (:mod:`operators.monitoring.burnrate`).
"""

from __future__ import annotations

import yaml

from operators.monitoring import burnrate, podparts
from operators.monitoring.resources.prometheusrule import PrometheusRule, PrometheusRuleSpec
from operators.monitoring.resources.routemonitor import RouteMonitor
from operators.monitoring.resources.servicemonitor import (
    Endpoint,
    ServiceMonitor,
    ServiceMonitorSpec,
)
from setpoint.resources.models.apps_v1 import Deployment, DeploymentSpec
from setpoint.resources.models.core_v1 import (
    ConfigMap,
    ConfigMapVolumeSource,
    Container,
    ContainerPort,
    PodSpec,
    PodTemplateSpec,
    Service,
    ServicePort,
    ServiceSpec,
    Volume,
    VolumeMount,
)
from setpoint.resources.models.meta_v1 import LabelSelector, ObjectMeta

APP = "blackbox-exporter"
PORT = 9115
CONFIG_DIR = "/etc/blackbox_exporter"
MODULES = {
    "modules": {
        "http_2xx": {"prober": "http", "timeout": "5s",
                     "http": {"preferred_ip_protocol": "ip4"}},
        "insecure_http_2xx": {"prober": "http", "timeout": "5s",
                              "http": {"preferred_ip_protocol": "ip4",
                                       "tls_config": {"insecure_skip_verify": True}}},
    }
}


def name_of(rm: RouteMonitor) -> str:
    return f"{rm.metadata.name}-blackbox-exporter"


def module(rm: RouteMonitor) -> str:
    return "insecure_http_2xx" if rm.spec.insecure_skip_tls_verify else "http_2xx"


def labels(rm: RouteMonitor) -> dict[str, str]:
    return podparts.labels(APP, str(rm.metadata.name))


def selector(rm: RouteMonitor) -> dict[str, str]:
    return podparts.selector(APP, str(rm.metadata.name))


def interval_seconds(rm: RouteMonitor) -> int:
    return burnrate.seconds(rm.spec.interval)


def series_labels(rm: RouteMonitor) -> dict[str, str]:
    """The labels of the probe series: the job is the exporter Service's name."""
    return {"job": name_of(rm), "namespace": str(rm.metadata.namespace)}


def config_map(rm: RouteMonitor) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name_of(rm), labels=labels(rm)),
                     data={"config.yml": yaml.safe_dump(MODULES, sort_keys=False)})


def deployment(rm: RouteMonitor) -> Deployment:
    container = Container(
        name="blackbox-exporter", image=rm.spec.blackbox_image,
        args=[f"--config.file={CONFIG_DIR}/config.yml",
              f"--web.listen-address=0.0.0.0:{PORT}"],
        ports=[ContainerPort(name="http", container_port=PORT, protocol="TCP")],
        volume_mounts=[VolumeMount(name="config", mount_path=CONFIG_DIR, read_only=True)],
        readiness_probe=podparts.http_probe("/-/healthy", period=5, port="http"))
    return Deployment(
        metadata=ObjectMeta(name=name_of(rm), labels=labels(rm)),
        spec=DeploymentSpec(
            replicas=1, selector=LabelSelector(match_labels=selector(rm)),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels(rm)),
                spec=PodSpec(containers=[container], volumes=[Volume(
                    name="config", config_map=ConfigMapVolumeSource(name=name_of(rm)))]))))


def service(rm: RouteMonitor) -> Service:
    return Service(metadata=ObjectMeta(name=name_of(rm), labels=labels(rm)),
                   spec=ServiceSpec(selector=selector(rm), ports=[ServicePort(
                       name="http", port=PORT, protocol="TCP", target_port="http")]))


def service_monitor(rm: RouteMonitor, url: str) -> ServiceMonitor:
    return ServiceMonitor(
        metadata=ObjectMeta(name=str(rm.metadata.name),
                            labels={**labels(rm), **(rm.spec.labels or {})}),
        spec=ServiceMonitorSpec(
            selector=LabelSelector(match_labels=selector(rm)),
            endpoints=[Endpoint(port="http", path="/probe", interval=rm.spec.interval,
                params={"module": [module(rm)], "target": [url]})]))


def prometheus_rule(rm: RouteMonitor, url: str) -> PrometheusRule:
    group = burnrate.rule_group(str(rm.metadata.name), series_labels(rm),
                                rm.spec.slo.target_availability_percent, url,
                                interval_seconds(rm))
    return PrometheusRule(
        metadata=ObjectMeta(name=str(rm.metadata.name),
                            labels={**labels(rm), **(rm.spec.labels or {})}),
        spec=PrometheusRuleSpec.model_validate({"groups": [group]}))
