"""The monitoring operator: Prometheus and Alertmanager as a service, and route monitoring
with SLO burn-rate alerts (group ``monitoring.setpoint.dev``).

- :mod:`.resources`: the custom resources (``ServiceMonitor``, ``PrometheusRule`` with
  the prometheus-operator's shapes; ``Prometheus``, ``Alertmanager``, ``RouteMonitor``);
- :mod:`.discovery`, :mod:`.promconfig`, :mod:`.rulefiles`: what a Prometheus selects and
  the configuration made of it; :mod:`.storage`: the storage and retention rule;
- :mod:`.validation`: parsing and promtool/amtool checks before anything is rolled out;
- :mod:`.podparts`, :mod:`.prometheus_objects`, :mod:`.alertmanager_objects`,
  :mod:`.blackbox`: the objects made; :mod:`.serverapi`: what the running servers say;
- :mod:`.burnrate`: the SRE workbook's multiwindow, multi-burn-rate alerts;
- :mod:`.prometheus_controller`, :mod:`.alertmanager_controller`,
  :mod:`.routemonitor_controller`: the reconciles; :mod:`.operator`: the Manager
  (``setpoint run operators.monitoring.operator:manager``).
"""
