"""The monitoring operator's custom resources (group ``monitoring.setpoint.dev``).

``ServiceMonitor`` and ``PrometheusRule`` have the prometheus-operator's shapes
(``monitoring.coreos.com/v1`` field names), so existing objects apply here with only the
apiVersion changed. ``Prometheus`` and ``Alertmanager`` keep the prometheus-operator's
names for the fields they share with it; ``RouteMonitor`` is the route monitor operator's.
"""

from operators.monitoring.resources.alertmanager import Alertmanager, AlertmanagerSpec
from operators.monitoring.resources.common import GROUP, NamespaceSelector
from operators.monitoring.resources.prometheus import Prometheus, PrometheusSpec
from operators.monitoring.resources.prometheusrule import PrometheusRule, PrometheusRuleSpec
from operators.monitoring.resources.routemonitor import RouteMonitor, RouteMonitorSpec
from operators.monitoring.resources.servicemonitor import ServiceMonitor, ServiceMonitorSpec

__all__ = ["GROUP", "Alertmanager", "AlertmanagerSpec", "NamespaceSelector", "Prometheus",
           "PrometheusRule", "PrometheusRuleSpec", "PrometheusSpec", "RouteMonitor",
           "RouteMonitorSpec", "ServiceMonitor", "ServiceMonitorSpec"]
