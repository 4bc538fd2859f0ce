"""``PrometheusRule``: recording and alerting rules (the prometheus-operator's shape)::

    apiVersion: monitoring.setpoint.dev/v1
    kind: PrometheusRule
    metadata: {name: web, labels: {team: web}}
    spec:
      groups:
      - name: web
        rules:
        - alert: WebDown
          expr: up{job="web"} == 0
          for: 5m
          labels: {severity: page}
"""

from __future__ import annotations

from pydantic import Field

from operators.monitoring.resources.common import (
    DURATION,
    GROUP,
    VERSION,
    ConfigResourceStatus,
)
from setpoint.resources import CustomResource, IntOrString, Model


class PrometheusRuleItem(Model):
    """One rule: ``record`` or ``alert``, with its PromQL ``expr``. (That it is exactly
    one of them is checked when the configuration is validated, not by a CEL rule: one
    per rule of every group exceeds the API server's CEL cost budget for unbounded
    lists, and the prometheus-operator's CRD has no such rule either.)"""

    record: str | None = Field(None, description="The name of the recorded series.")
    alert: str | None = Field(None, description="The alert's name.")
    expr: IntOrString = Field(..., description="The PromQL expression.")
    for_: str | None = Field(None, alias="for", pattern=DURATION,
                             description="How long the alert must be pending to fire.")
    keep_firing_for: str | None = Field(None, alias="keep_firing_for", pattern=DURATION,
                                        description="How long the alert keeps firing after "
                                        "its expression stops matching.")
    labels: dict[str, str] | None = Field(None, description="Labels added.")
    annotations: dict[str, str] | None = Field(None, description="Alert annotations.")


class RuleGroup(Model):
    """A group of rules evaluated together at one interval."""

    name: str = Field(..., min_length=1, description="The group's name (unique in the "
                      "object).")
    interval: str | None = Field(None, pattern=DURATION, description="Evaluation interval.")
    limit: int | None = Field(None, ge=0, description="Most alerts/series the group makes.")
    rules: list[PrometheusRuleItem] = Field(default_factory=list, description="The rules.")


class PrometheusRuleSpec(Model):
    """The rule groups."""

    groups: list[RuleGroup] = Field(default_factory=list, description="The rule groups.")


class PrometheusRule(CustomResource, group=GROUP, version=VERSION, short_names=["promrule"],
                     categories=["prometheus-operator"]):
    """Rules loaded by the Prometheus objects whose ruleSelector selects it."""

    spec: PrometheusRuleSpec = Field(default_factory=PrometheusRuleSpec)
    status: ConfigResourceStatus = ConfigResourceStatus()
