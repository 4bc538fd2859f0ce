"""``Prometheus``: a Prometheus server run by the operator::

    apiVersion: monitoring.setpoint.dev/v1
    kind: Prometheus
    metadata: {name: main}
    spec:
      replicas: 2
      version: v2.42.0
      retention: 7d
      resources: {limits: {memory: 2Gi}}
      serviceMonitorSelector: {matchLabels: {team: web}}
      serviceMonitorNamespaceSelector: {}          # every namespace
      ruleSelector: {matchLabels: {team: web}}
      alerting: {alertmanagers: [{name: main}]}
      rules: {alert: {resendDelay: 1m}}           # the --rules.alert.* flags
      externalLabels: {cluster: eu-1}
      remoteWrite: [{url: "http://thanos-receive:19291/api/v1/receive"}]
      federation: [{name: edge, match: ['{job="web"}']}]

Field names follow the prometheus-operator's ``monitoring.coreos.com/v1`` Prometheus
(``federation`` is this operator's own). A nil namespace selector means the Prometheus'
own namespace, an empty one every namespace, as there. Storage and retention, when not
given, are derived as :mod:`operators.monitoring.storage` documents.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from operators.monitoring.resources.common import (
    DURATION,
    GROUP,
    VERSION,
    MonitoringStatus,
)
from setpoint.resources import CustomResource, Model, PrinterColumn, Scale
from setpoint.resources.models.core_v1 import (
    EmptyDirVolumeSource,
    PersistentVolumeClaimSpec,
    ResourceRequirements,
)
from setpoint.resources.models.meta_v1 import LabelSelector

DEFAULT_VERSION = "v2.42.0"
DEFAULT_IMAGE = "quay.io/prometheus/prometheus"
BYTES = r"^(0|([0-9]+)(B|KB|MB|GB|TB|PB|EB))$"
"""A Prometheus byte size (``512MB``), as ``--storage.tsdb.retention.size`` takes it."""


class AlertmanagerEndpoints(Model):
    """An Alertmanager to send alerts to: the Service (port ``web``) of an ``Alertmanager``
    of this operator, or any Service with such a port."""

    name: str = Field(..., min_length=1, description="The Service's name (an Alertmanager "
                      "object's name also works: its Service is found).")
    namespace: str | None = Field(None, description="Default: the Prometheus' namespace.")
    port: str = Field("web", description="The Service port's name.")
    scheme: Literal["http", "https"] | None = Field(None, description="http or https.")
    path_prefix: str | None = Field(None, description="Prefix of the Alertmanager API.")
    api_version: Literal["v2"] | None = Field(None, description="The API version (v2).")


class AlertingSpec(Model):
    alertmanagers: list[AlertmanagerEndpoints] = Field(
        default_factory=list, description="Where alerts go.")


class RemoteWriteSpec(Model):
    url: str = Field(..., pattern=r"^https?://", description="The remote-write endpoint.")
    name: str | None = Field(None, description="The queue's name.")
    remote_timeout: str | None = Field(None, pattern=DURATION, description="Request timeout.")
    write_relabel_configs: list[dict[str, Any]] | None = Field(
        None, description="Relabelings applied to samples before sending.")


class FederationSource(Model):
    """Another ``Prometheus`` whose ``/federate`` endpoint this one scrapes."""

    name: str = Field(..., min_length=1, description="The federated Prometheus' name.")
    namespace: str | None = Field(None, description="Default: this Prometheus' namespace.")
    match: list[str] = Field(..., min_length=1, description="The match[] series selectors.")
    interval: str | None = Field(None, pattern=DURATION, description="Scrape interval.")


class RulesAlert(Model):
    """The ``--rules.alert.*`` flags of the servers (the prometheus-operator's
    ``RulesAlert``, pkg/apis/monitoring/v1/prometheus_types.go); unset, Prometheus'
    defaults (1h, 10m, 1m). They are flags: changing one restarts the pods."""

    for_outage_tolerance: str | None = Field(
        None, pattern=DURATION, description="Max time to tolerate prometheus outage for "
        "restoring 'for' state of alert.")
    for_grace_period: str | None = Field(
        None, pattern=DURATION, description="Minimum duration between alert and restored "
        "'for' state.")
    resend_delay: str | None = Field(
        None, pattern=DURATION, description="Minimum amount of time to wait before "
        "resending an alert to Alertmanager.")


class RulesSpec(Model):
    alert: RulesAlert = Field(default_factory=RulesAlert,
                              description="The parameters of the rules' engine.")


class VolumeClaimTemplate(Model):
    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)


class StorageSpec(Model):
    """Where the TSDB lives: an emptyDir (the default) or a PVC per replica."""

    empty_dir: EmptyDirVolumeSource | None = None
    volume_claim_template: VolumeClaimTemplate | None = None


class PrometheusSpec(Model):
    """What Prometheus servers to run and what they scrape, evaluate and send."""

    replicas: int = Field(1, ge=0, description="Identical Prometheus servers.")
    version: str = Field(DEFAULT_VERSION, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$",
                         description="The image tag.")
    image: str | None = Field(None, description="The image (default quay.io/prometheus/"
                              "prometheus:<version>).")
    retention: str | None = Field(None, pattern=DURATION, description="How long samples are "
                                  "kept (default: see the storage rule).")
    retention_size: str | None = Field(None, pattern=BYTES, description="Most bytes of "
                                       "blocks kept (default: see the storage rule).")
    resources: ResourceRequirements | None = None
    node_selector: dict[str, str] | None = None
    storage: StorageSpec | None = None
    scrape_interval: str = Field("30s", pattern=DURATION)
    evaluation_interval: str = Field("30s", pattern=DURATION)
    service_monitor_selector: LabelSelector | None = Field(
        None, description="The ServiceMonitors to use (nil: none).")
    service_monitor_namespace_selector: LabelSelector | None = Field(
        None, description="Their namespaces' labels (nil: this namespace; {}: all).")
    rule_selector: LabelSelector | None = Field(None, description="The PrometheusRules to "
                                                "load (nil: none).")
    rule_namespace_selector: LabelSelector | None = Field(
        None, description="Their namespaces' labels (nil: this namespace; {}: all).")
    alerting: AlertingSpec | None = None
    rules: RulesSpec | None = Field(None, description="The --rules.alert.* flags.")
    external_labels: dict[str, str] | None = None
    remote_write: list[RemoteWriteSpec] | None = None
    federation: list[FederationSource] | None = None


class ScrapeTarget(Model):
    """A target as Prometheus' ``/api/v1/targets`` reports it."""

    job: str
    instance: str
    health: str
    last_error: str | None = None


class PrometheusStatus(MonitoringStatus):
    replicas: int = 0
    available_replicas: int = 0
    selector: str | None = None
    targets: list[ScrapeTarget] | None = Field(None, description="The active targets, as "
                                               "the first ready server reports them.")
    targets_up: int = 0
    targets_down: int = 0


class Prometheus(CustomResource, group=GROUP, version=VERSION, short_names=["prom"],
                 categories=["prometheus-operator"],
                 printer_columns=[
                     PrinterColumn("Version", "string", ".spec.version"),
                     PrinterColumn("Desired", "integer", ".spec.replicas"),
                     PrinterColumn("Ready", "integer", ".status.availableReplicas"),
                     PrinterColumn("Up", "integer", ".status.targetsUp"),
                     PrinterColumn("Down", "integer", ".status.targetsDown"),
                     PrinterColumn.age()],
                 scale=Scale(".spec.replicas", ".status.replicas", ".status.selector")):
    """Prometheus servers configured from ServiceMonitors and PrometheusRules."""

    spec: PrometheusSpec = Field(default_factory=PrometheusSpec)
    status: PrometheusStatus = PrometheusStatus()
