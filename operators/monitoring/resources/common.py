"""Pieces the monitoring resources share: the group, namespace selectors, statuses."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from setpoint.resources import Condition, ConditionedStatus, ListType, Model

GROUP = "monitoring.setpoint.dev"
VERSION = "v1"

DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?" \
           r"(([0-9]+)ms)?)$"
"""A Prometheus duration (``30s``, ``1h30m``), as the prometheus-operator's CRDs check it."""
_UNITS = {"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1,
          "ms": 0.001}


def duration_seconds(duration: str) -> float:
    """The seconds of a :data:`DURATION` (``1m30s`` -> 90)."""
    return sum(int(number) * _UNITS[unit]
               for number, unit in re.findall(r"([0-9]+)(ms|[ywdhms])", duration))


class NamespaceSelector(Model):
    """Which namespaces to select objects from (the prometheus-operator's
    ``NamespaceSelector``): ``any: true`` for all, or ``matchNames``; neither means the
    object's own namespace."""

    any: bool = Field(False, description="Select objects in every namespace.")
    match_names: list[str] | None = Field(None, description="The namespaces to select from.")


class MonitoringStatus(ConditionedStatus):
    """Conditions Available and Reconciled (with reasons), and the generated
    configuration's hash."""

    configuration_hash: str | None = Field(
        None, description="The hash of the configuration last generated and accepted.")


class WorkloadBinding(Model):
    """One Prometheus that selects a configuration object (ServiceMonitor,
    PrometheusRule), and whether it took the object into its configuration: the
    prometheus-operator's ``WorkloadBinding`` (pkg/apis/monitoring/v1/types.go), whose only
    condition type is ``Accepted``."""

    group: str = Field(..., description="The workload's group (monitoring.setpoint.dev).")
    resource: str = Field(..., description="The workload's resource (prometheuses).")
    name: str = Field(..., min_length=1, description="The workload's name.")
    namespace: str = Field(..., min_length=1, description="The workload's namespace.")
    conditions: Annotated[list[Condition] | None, ListType.map(keys=["type"])] = Field(
        None, description="Accepted: whether the configuration generated with this object "
        "passed validation and was rolled out to this workload.")


class ConfigResourceStatus(ConditionedStatus):
    """The status of a configuration object (the prometheus-operator's
    ``ConfigResourceStatus``), written by the Prometheus controller when it renders a
    configuration: ``bindings``, one per Prometheus that selects the object, and over them
    all the conditions ``Reconciled`` (the operator has seen this generation: ``Bound`` to
    N workloads, or ``NotSelected``) and ``Accepted`` (True when every binding accepted it,
    False when one rejected it, Unknown when none selects it)."""

    bindings: Annotated[list[WorkloadBinding] | None,
                        ListType.map(keys=["group", "resource", "name", "namespace"])] = Field(
        None, description="The workloads that select this object.")
