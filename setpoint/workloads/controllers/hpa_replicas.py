"""The HPA's replica calculator over the resource metrics API.

A port of kube-controller-manager 1.32's ``pkg/controller/podautoscaler/replica_calculator.go``
(``GetResourceReplicas``, ``GetRawResourceReplicas``, ``groupPods``, ``calculatePodRequests``)
and of ``metrics/client.go``'s resource metrics client and ``metrics/utilization.go``. The
PodMetrics are listed through the API server from ``metrics.k8s.io/v1beta1`` (the workloads'
metrics-server behind its APIService), the pods come from the controller's cache. Errors
carry Go's texts, since they end up in the HPA's conditions and events.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from setpoint.client import ApiError, NotFoundError, ServiceUnavailableError
from setpoint.machinery.quantity import Quantity, QuantityError, parse_quantity
from setpoint.workloads.controllers.podcontrol import pod_condition
from setpoint.workloads.kubelet.annotations import parse_duration

Obj = dict[str, Any]
MetricsLister = Callable[[str, str], Awaitable[Obj]]
"""``(namespace, labelSelector) -> PodMetricsList``."""


class MetricsError(Exception):
    """A failure to compute a proposal; its text is Go's error text."""


@dataclass(frozen=True)
class PodMetric:
    value: int  # milli-units
    timestamp: datetime | None = None
    window: timedelta = timedelta(0)


@dataclass(frozen=True)
class Proposal:
    """What one resource metric proposes."""

    replicas: int
    utilization: int | None  # percent of the requests, for a utilization target
    raw_average: int  # milli-units per pod


def milli(value: Any) -> int:
    """``Quantity.MilliValue()`` (rounded up)."""
    return -(-parse_quantity(str(value)).nanos // 1_000_000)


def milli_quantity(value: int) -> str:
    """``resource.NewMilliQuantity(value, DecimalSI)`` as serialized."""
    return str(Quantity(value * 1_000_000))


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _describe(err: ApiError) -> str:
    """client-go's text for a failed list of pods.metrics.k8s.io."""
    if isinstance(err, ServiceUnavailableError):
        return "the server is currently unable to handle the request (get pods.metrics.k8s.io)"
    if isinstance(err, NotFoundError):
        return "the server could not find the requested resource (get pods.metrics.k8s.io)"
    return err.message or str(err)


async def resource_metric(lister: MetricsLister, resource: str, namespace: str,
                          selector: str, container: str) -> dict[str, PodMetric]:
    """``resourceMetricsClient.GetResourceMetric``: each pod's usage of ``resource`` (summed
    over its containers, or of ``container``), in milli-units."""
    try:
        listed = await lister(namespace, selector)
    except ApiError as err:
        raise MetricsError("unable to fetch metrics from resource metrics API: "
                           f"{_describe(err)}") from err
    items = listed.get("items") or []
    if not items:
        raise MetricsError("no metrics returned from resource metrics API")
    out: dict[str, PodMetric] = {}
    for item in items:
        containers = item.get("containers") or []
        if container:
            found = [c for c in containers if c.get("name") == container]
            if not found:
                raise MetricsError(f"failed to get container metrics: container {container} "
                                   f"not present in metrics for pod "
                                   f"{item['metadata'].get('namespace')}/"
                                   f"{item['metadata']['name']}")
            containers = found
        total, missing = 0, not containers
        for entry in containers:
            value = (entry.get("usage") or {}).get(resource)
            if value is None:
                missing = True
                break
            try:
                total += milli(value)
            except QuantityError:
                missing = True
                break
        if missing:
            continue
        try:
            window = timedelta(seconds=parse_duration(str(item.get("window") or "0")))
        except ValueError:
            window = timedelta(0)
        out[item["metadata"]["name"]] = PodMetric(total, parse_time(item.get("timestamp")),
                                                  window)
    return out


def group_pods(pods: list[Obj], metrics: Mapping[str, PodMetric], resource: str,
               cpu_initialization: timedelta, initial_readiness_delay: timedelta,
               now: datetime) -> tuple[int, set[str], set[str], set[str]]:
    """``groupPods``: (ready pod count, unready, missing, ignored)."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        phase = status.get("phase")
        if pod["metadata"].get("deletionTimestamp") or phase == "Failed":
            ignored.add(name)
            continue
        if phase == "Pending" or not phase:
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            condition = pod_condition(pod, "Ready")
            started = parse_time(status.get("startTime"))
            transition = parse_time((condition or {}).get("lastTransitionTime"))
            if condition is None or started is None or transition is None:
                is_unready = True
            elif started + cpu_initialization > now:
                # within the initialization period: one whole window of usage since the
                # last readiness change, or the sample says nothing about the pod's load
                is_unready = condition.get("status") == "False" or (
                    metric.timestamp is None or metric.timestamp < transition + metric.window)
            else:
                # unready and never ready since it started
                is_unready = (condition.get("status") == "False"
                              and started + initial_readiness_delay > transition)
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def pod_requests(pods: list[Obj], resource: str, container: str) -> dict[str, int]:
    """``calculatePodRequests``: each pod's request of ``resource`` in milli-units (its
    containers and restartable init containers)."""
    out: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        containers = [*(spec.get("containers") or []),
                      *(c for c in spec.get("initContainers") or []
                        if c.get("restartPolicy") == "Always")]
        total = 0
        for c in containers:
            if container and c.get("name") != container:
                continue
            value = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if value is None:
                raise MetricsError(f"missing request for {resource} in container "
                                   f"{c.get('name')} of Pod {pod['metadata']['name']}")
            total += milli(value)
        out[pod["metadata"]["name"]] = total
    return out


def utilization_ratio(metrics: Mapping[str, PodMetric], requests: Mapping[str, int],
                      target: int) -> tuple[float, int, int]:
    """``GetResourceUtilizationRatio``: (ratio, utilization %, raw average)."""
    metrics_total = requests_total = entries = 0
    for name, metric in metrics.items():
        request = requests.get(name)
        if request is None:
            continue  # extraneous metrics
        metrics_total += metric.value
        requests_total += request
        entries += 1
    if requests_total == 0:
        raise MetricsError("no metrics returned matched known pods")
    utilization = metrics_total * 100 // requests_total
    return utilization / target, utilization, metrics_total // entries


@dataclass(frozen=True)
class ReplicaCalculator:
    """``ReplicaCalculator`` with kube-controller-manager's flags."""

    tolerance: float = 0.1
    cpu_initialization: timedelta = timedelta(minutes=5)
    initial_readiness_delay: timedelta = timedelta(seconds=30)

    def resource_replicas(self, current: int, target: int, resource: str,
                          metrics: dict[str, PodMetric], pods: list[Obj], container: str,
                          now: datetime) -> Proposal:
        """``GetResourceReplicas`` after the metrics were fetched (``target``: percent)."""
        if not pods:
            raise MetricsError("no pods returned by selector while calculating replica count")
        ready, unready, missing, ignored = group_pods(
            pods, metrics, resource, self.cpu_initialization, self.initial_readiness_delay,
            now)
        for name in ignored | unready:
            metrics.pop(name, None)
        if not metrics:
            raise MetricsError("did not receive metrics for targeted pods "
                               "(pods might be unready)")
        requests = pod_requests(pods, resource, container)
        ratio, utilization, raw = utilization_ratio(metrics, requests, target)
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if abs(1.0 - ratio) <= self.tolerance:
                return Proposal(current, utilization, raw)
            return Proposal(math.ceil(ratio * ready), utilization, raw)
        if missing:
            if ratio < 1.0:
                # on a scale-down a missing pod counts as using all its request (or the
                # target, above 100%); on a scale-up as using nothing
                fallback = max(100, target)
                for name in missing:
                    metrics[name] = PodMetric(requests.get(name, 0) * fallback // 100)
            elif ratio > 1.0:
                for name in missing:
                    metrics[name] = PodMetric(0)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)
        new_ratio, _, _ = utilization_ratio(metrics, requests, target)
        if abs(1.0 - new_ratio) <= self.tolerance or (ratio < 1.0 < new_ratio) \
                or (new_ratio < 1.0 < ratio):
            return Proposal(current, utilization, raw)
        replicas = math.ceil(new_ratio * len(metrics))
        if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
            return Proposal(current, utilization, raw)
        return Proposal(replicas, utilization, raw)

    def raw_resource_replicas(self, current: int, target_milli: int, resource: str,
                              metrics: dict[str, PodMetric], pods: list[Obj],
                              now: datetime) -> Proposal:
        """``GetRawResourceReplicas`` (``calcPlainMetricReplicas``): an average value
        target in milli-units."""
        if not pods:
            raise MetricsError("no pods returned by selector while calculating replica count")
        ready, unready, missing, ignored = group_pods(
            pods, metrics, resource, self.cpu_initialization, self.initial_readiness_delay,
            now)
        for name in ignored | unready:
            metrics.pop(name, None)
        if not metrics:
            raise MetricsError("did not receive metrics for targeted pods "
                               "(pods might be unready)")
        raw = sum(m.value for m in metrics.values()) // len(metrics)
        ratio = raw / target_milli
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if abs(1.0 - ratio) <= self.tolerance:
                return Proposal(current, None, raw)
            return Proposal(math.ceil(ratio * ready), None, raw)
        for name in missing:
            metrics[name] = PodMetric(target_milli if ratio < 1.0 else 0)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)
        new_ratio = sum(m.value for m in metrics.values()) / len(metrics) / target_milli
        if abs(1.0 - new_ratio) <= self.tolerance or (ratio < 1.0 < new_ratio) \
                or (new_ratio < 1.0 < ratio):
            return Proposal(current, None, raw)
        replicas = math.ceil(new_ratio * len(metrics))
        if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
            return Proposal(current, None, raw)
        return Proposal(replicas, None, raw)
