"""The monitoring operator's Manager, serving the Prometheus, Alertmanager and
RouteMonitor controllers: ``setpoint run operators.monitoring.operator:manager``.

It caches only the pods it manages; Services, Endpoints and Namespaces are cached cluster
wide because ServiceMonitors may select them in any namespace.
"""

from __future__ import annotations

from operators.monitoring.alertmanager_controller import alertmanager
from operators.monitoring.podparts import MANAGED_BY, OPERATOR
from operators.monitoring.prometheus_controller import prometheus
from operators.monitoring.routemonitor_controller import routemonitor
from setpoint.resources.models.core_v1 import Pod
from setpoint.runtime import CacheScope, Manager, ManagerSettings

settings = ManagerSettings(
    name=OPERATOR,
    leader_election=True,
    http_port=8081,
    cache_scopes={Pod: CacheScope(label_selector=f"{MANAGED_BY}={OPERATOR}")},
)

manager = Manager([prometheus, alertmanager, routemonitor], settings=settings)
