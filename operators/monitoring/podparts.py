"""Pieces every pod of the monitoring operator shares: labels, the configuration
reloader, resources as the API server stores them, HTTP probes.

The labels are the prometheus-operator's (``app.kubernetes.io/name: prometheus`` or
``alertmanager``, ``app.kubernetes.io/instance``, ``prometheus: <name>`` or
``alertmanager: <name>``, ``operator.prometheus.io/name``), so ServiceMonitors written for
it select our pods and Services; ``app.kubernetes.io/managed-by`` says who made them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from setpoint.resources.models.core_v1 import (
    Container,
    EnvVar,
    EnvVarSource,
    HTTPGetAction,
    ObjectFieldSelector,
    Pod,
    Probe,
    ResourceRequirements,
    VolumeMount,
)

NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "monitoring-operator"
OPERATOR_NAME = "operator.prometheus.io/name"
RELOADER_IMAGE = "docker.io/library/busybox:1.36"


def labels(app: str, name: str) -> dict[str, str]:
    """The labels of every object made for the ``app`` (prometheus, alertmanager …)
    instance ``name``."""
    return {NAME: app, INSTANCE: name, app: name, OPERATOR_NAME: name, MANAGED_BY: OPERATOR}


def selector(app: str, name: str) -> dict[str, str]:
    return {NAME: app, INSTANCE: name}


def selector_string(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def http_probe(path: str, *, period: int, failures: int = 3, port: str = "web") -> Probe:
    return Probe(http_get=HTTPGetAction(path=path, port=port), period_seconds=period,
                 failure_threshold=failures)


def pod_ip_env() -> EnvVar:
    return EnvVar(name="POD_IP", value_from=EnvVarSource(
        field_ref=ObjectFieldSelector(field_path="status.podIP")))


RELOAD_SCRIPT = """\
last=""
while true; do
  current=$(cat {watched} 2>/dev/null | md5sum)
  if [ "$current" != "$last" ] && \
      wget -q -O /dev/null --post-data="" "http://$POD_IP:{port}/-/reload"; then
    last="$current"
  fi
  sleep {period}
done
"""


def reloader(port: int, watched: Sequence[str], mounts: list[VolumeMount],
             period: int = 1) -> Container:
    """The configuration reloader beside the server (the prometheus-operator's
    ``config-reloader``): when the mounted files' content changes (the kubelet swaps
    the ``..data`` link), it POSTs ``/-/reload``, so a new configuration is loaded by the
    running server, never by restarting it. Until a reload succeeds it keeps trying, so a
    change made while the server starts is not lost."""
    script = RELOAD_SCRIPT.format(watched=" ".join(watched), port=port, period=period)
    return Container(name="config-reloader", image=RELOADER_IMAGE,
                     command=["sh", "-c", script], env=[pod_ip_env()],
                     volume_mounts=[m.model_copy(update={"read_only": True}) for m in mounts],
                     resources=ResourceRequirements(
                         requests={"cpu": "10m", "memory": "16Mi"}))


def ready_ips(pods: Iterable[Pod]) -> list[str]:
    """The addresses of the Ready pods not being deleted, by pod name."""
    found = []
    for pod in pods:
        status = pod.status
        if status is None or not status.pod_ip or pod.metadata.deletion_timestamp:
            continue
        if any(c.type == "Ready" and c.status == "True" for c in status.conditions or ()):
            found.append((str(pod.metadata.name), status.pod_ip))
    return [ip for _, ip in sorted(found)]
