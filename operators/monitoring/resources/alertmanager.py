"""``Alertmanager``: replicas that form one gossip cluster::

    apiVersion: monitoring.setpoint.dev/v1
    kind: Alertmanager
    metadata: {name: main}
    spec:
      replicas: 3
      configSecret: alertmanager-main     # key alertmanager.yaml
"""

from __future__ import annotations

from pydantic import Field

from operators.monitoring.resources.common import DURATION, GROUP, VERSION, MonitoringStatus
from setpoint.resources import CustomResource, Model, PrinterColumn, Scale
from setpoint.resources.models.core_v1 import ResourceRequirements

DEFAULT_VERSION = "v0.25.0"
DEFAULT_IMAGE = "quay.io/prometheus/alertmanager"


class AlertmanagerSpec(Model):
    replicas: int = Field(1, ge=0, description="Alertmanagers in the gossip cluster.")
    version: str = Field(DEFAULT_VERSION, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
    image: str | None = None
    config_secret: str | None = Field(
        None, description="The Secret with the configuration in key alertmanager.yaml "
        "(default alertmanager-<name>; without it, a configuration that routes every alert "
        "to a receiver named null).")
    retention: str = Field("120h", pattern=DURATION, description="How long silences and "
                           "notification logs are kept.")
    resources: ResourceRequirements | None = None
    node_selector: dict[str, str] | None = None


class Peer(Model):
    name: str
    address: str


class AlertmanagerStatus(MonitoringStatus):
    replicas: int = 0
    available_replicas: int = 0
    selector: str | None = None
    cluster_status: str | None = Field(None, description="ready or settling, as an "
                                       "Alertmanager reports it.")
    peers: list[Peer] | None = Field(None, description="The gossip cluster's members, as "
                                     "an Alertmanager reports them.")


class Alertmanager(CustomResource, group=GROUP, version=VERSION, short_names=["am"],
                   categories=["prometheus-operator"],
                   printer_columns=[
                       PrinterColumn("Desired", "integer", ".spec.replicas"),
                       PrinterColumn("Ready", "integer", ".status.availableReplicas"),
                       PrinterColumn("Cluster", "string", ".status.clusterStatus"),
                       PrinterColumn.age()],
                   scale=Scale(".spec.replicas", ".status.replicas", ".status.selector")):
    """Alertmanagers that gossip silences and notifications among themselves."""

    spec: AlertmanagerSpec = Field(default_factory=AlertmanagerSpec)
    status: AlertmanagerStatus = AlertmanagerStatus()
