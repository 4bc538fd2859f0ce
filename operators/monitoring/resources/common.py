"""Pieces the monitoring resources share: the group, namespace selectors, statuses."""

from __future__ import annotations

from pydantic import Field

from setpoint.resources import ConditionedStatus, Model

GROUP = "monitoring.setpoint.dev"
VERSION = "v1"

DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?" \
           r"(([0-9]+)ms)?)$"
"""A Prometheus duration (``30s``, ``1h30m``), as the prometheus-operator's CRDs check it."""


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
