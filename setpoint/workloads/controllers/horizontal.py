"""The horizontal pod autoscaler controller: HorizontalPodAutoscalers scale their targets.

A port of kube-controller-manager 1.32's ``pkg/controller/podautoscaler/horizontal.go``
(``reconcileAutoscaler``). Every sync period (``--horizontal-pod-autoscaler-sync-period``,
15 s: ``WorkloadSettings.hpa_sync_period_seconds``) each HPA is taken up once: the scale
subresource of ``spec.scaleTargetRef`` is read, each metric proposes a replica count (resource
and container-resource metrics from ``metrics.k8s.io``, :mod:`.hpa_replicas`), the highest
is normalized (:mod:`.hpa_behavior`), the scale is written when it changes, and the status
(``currentReplicas``, ``desiredReplicas``, ``currentMetrics``, ``lastScaleTime``, the
AbleToScale, ScalingActive and ScalingLimited conditions) is written when it changed, with
the events ``horizontal-pod-autoscaler`` records. As in Go, a new or changed HPA waits for
the sync period too (its queue adds every key rate-limited by that period), and nothing is
polled for a cluster without HPAs: each HPA is its own timer.

The custom and external metrics APIs are not served by the embedded cluster: Pods, Object
and External metrics fail as they do on a cluster without an adapter.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from setpoint.client import ApiError, Kind
from setpoint.machinery import labels as label_selectors
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Manager, Request, Result
from setpoint.runtime._conditions import set_condition
from setpoint.runtime._objects import clone, meta
from setpoint.workloads.controllers.hpa_behavior import (
    AutoscalerHistory,
    Normalized,
    normalize,
    normalize_with_behavior,
)
from setpoint.workloads.controllers.hpa_replicas import (
    MetricsError,
    Proposal,
    ReplicaCalculator,
    milli,
    milli_quantity,
    resource_metric,
)
from setpoint.workloads.controllers.podcontrol import component_recorder
from setpoint.workloads.settings import WorkloadSettings

HPA = Kind("autoscaling/v2", "HorizontalPodAutoscaler")
POD = Kind("v1", "Pod")
COMPONENT = "horizontal-pod-autoscaler"
ABLE, ACTIVE, LIMITED = "AbleToScale", "ScalingActive", "ScalingLimited"


class ComputeError(Exception):
    """Every metric failed: the condition to set, and Go's error text."""

    def __init__(self, message: str, condition: tuple[str, str, str] | None,
                 statuses: list[Obj]) -> None:
        super().__init__(message)
        self.condition = condition
        self.statuses = statuses


@dataclass
class MetricResult:
    replicas: int
    name: str
    status: Obj


def _unable(reason: str, err: str) -> tuple[str, str, str]:
    """``getUnableComputeReplicaCountCondition``'s condition (ScalingActive False)."""
    return ("False", reason, f"the HPA was unable to compute the replica count: {err}")


class HorizontalReconciler:
    """Syncs one HorizontalPodAutoscaler per call, at most once per sync period."""

    def __init__(self, manager: Manager, events: EventRecorder | None,
                 settings: WorkloadSettings) -> None:
        self.manager = manager
        self.events = events
        self.period = settings.hpa_sync_period_seconds
        self.downscale_window = settings.hpa_downscale_stabilization_seconds
        self.calculator = ReplicaCalculator(
            tolerance=settings.hpa_tolerance,
            cpu_initialization=timedelta(seconds=settings.hpa_cpu_initialization_seconds),
            initial_readiness_delay=timedelta(
                seconds=settings.hpa_initial_readiness_delay_seconds))
        self.histories: dict[Request, AutoscalerHistory] = {}
        self.due: dict[Request, float] = {}

    def __repr__(self) -> str:
        return f"HorizontalReconciler(every={self.period}s)"

    def _event(self, hpa: Obj, type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            self.events.event(hpa, type_, reason, note)

    async def reconcile(self, request: Request) -> Result:
        hpa = self.manager.cache.get(HPA, request.name, request.namespace)
        if hpa is None:
            self.histories.pop(request, None)
            self.due.pop(request, None)
            return Result()
        now = time.monotonic()
        due = self.due.get(request)
        if due is None or now < due:
            # the workqueue's FixedItemIntervalRateLimiter: a key is processed a sync
            # period after it was added, whatever added it (a change, our own status write)
            if due is None:
                due = self.due[request] = now + self.period
            return Result(requeue_after=max(due - now, 0.001))
        self.due[request] = now + self.period
        await self.sync(clone(hpa), self.histories.setdefault(request, AutoscalerHistory()))
        return Result(requeue_after=self.period)

    # -- reconcileAutoscaler ---------------------------------------------------------------

    async def sync(self, hpa: Obj, history: AutoscalerHistory) -> None:
        before = clone(hpa.get("status") or {})
        status = hpa.setdefault("status", {})
        status.setdefault("conditions", [])
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        namespace = meta(hpa)["namespace"]
        try:
            scale = await self.manager.client.get_scale(
                Kind(ref.get("apiVersion") or "", ref.get("kind") or ""), ref.get("name", ""),
                namespace=namespace)
        except (ApiError, LookupError, ValueError) as err:
            text = _scale_error(err, ref)
            self._event(hpa, "Warning", "FailedGetScale", text)
            self._condition(hpa, ABLE, "False", "FailedGetScale",
                            f"the HPA controller was unable to get the target's current "
                            f"scale: {text}")
            await self._write_status(hpa, before)
            return
        self._condition(hpa, ABLE, "True", "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        now = time.monotonic()
        history.record_initial(current, now)
        minimum = 1 if spec.get("minReplicas") is None else int(spec["minReplicas"])
        maximum = int(spec.get("maxReplicas") or 0)
        statuses: list[Obj] | None = status.get("currentMetrics")
        rescale, reason, desired = True, "", 0
        if current == 0 and minimum != 0:
            rescale = False
            self._condition(hpa, ACTIVE, "False", "ScalingDisabled",
                            "scaling is disabled since the replica count of the target is "
                            "zero")
        elif current > maximum:
            reason, desired = "Current number of replicas above Spec.MaxReplicas", maximum
        elif current < minimum:
            reason, desired = "Current number of replicas below Spec.MinReplicas", minimum
        else:
            try:
                proposed, metric, statuses = await self.compute(hpa, scale)
            except ComputeError as err:
                self._set_status(hpa, current, status.get("desiredReplicas") or 0,
                                 err.statuses, rescale=False)
                await self._write_status(hpa, before)
                self._event(hpa, "Warning", "FailedComputeMetricsReplicas", str(err))
                return
            desired = proposed
            if desired > current:
                reason = f"{metric} above target"
            elif desired < current:
                reason = "All metrics below target"
            behavior = spec.get("behavior")
            if behavior is None:
                normalized = normalize(history, current, desired, minimum, maximum,
                                       self.downscale_window, now)
            else:
                normalized = normalize_with_behavior(history, behavior, current, desired,
                                                     minimum, maximum, self.downscale_window,
                                                     now)
            self._normalized_conditions(hpa, normalized)
            desired = normalized.replicas
            rescale = desired != current
        if rescale:
            body = clone(scale)
            body.setdefault("spec", {})["replicas"] = desired
            try:
                await self.manager.client.update_scale(
                    Kind(ref.get("apiVersion") or "", ref.get("kind") or ""), ref["name"], body,
                    namespace=namespace)
            except ApiError as err:
                self._event(hpa, "Warning", "FailedRescale",
                            f"New size: {desired}; reason: {reason}; error: {err.message}")
                self._condition(hpa, ABLE, "False", "FailedUpdateScale",
                                f"the HPA controller was unable to update the target scale: "
                                f"{err.message}")
                self._set_status(hpa, current, status.get("desiredReplicas") or 0,
                                 status.get("currentMetrics"), rescale=False)
                await self._write_status(hpa, before)
                return
            self._condition(hpa, ABLE, "True", "SucceededRescale",
                            f"the HPA controller was able to update the target scale to "
                            f"{desired}")
            self._event(hpa, "Normal", "SuccessfulRescale",
                        f"New size: {desired}; reason: {reason}")
            history.store_scale_event(spec.get("behavior"), current, desired, now)
        else:
            desired = current
        self._set_status(hpa, current, desired, statuses, rescale=rescale)
        await self._write_status(hpa, before)

    def _normalized_conditions(self, hpa: Obj, normalized: Normalized) -> None:
        self._condition(hpa, ABLE, "True", *normalized.able_to_scale)
        self._condition(hpa, LIMITED, "True" if normalized.limited else "False",
                        *normalized.limited_reason)

    # -- computeReplicasForMetrics ---------------------------------------------------------

    async def compute(self, hpa: Obj, scale: Obj) -> tuple[int, str, list[Obj]]:
        """The highest proposal of the HPA's metrics, its metric's name and the statuses;
        raises :class:`ComputeError` when every metric failed (or some failed and the
        others would scale down)."""
        text = (scale.get("status") or {}).get("selector") or ""
        if not text:
            self._event(hpa, "Warning", "SelectorRequired", "selector is required")
            self._condition(hpa, ACTIVE, "False", "InvalidSelector",
                            "the HPA target's scale is missing a selector")
            raise ComputeError("selector is required", None, [])
        try:
            selector = label_selectors.parse(text)
        except ValueError as err:
            message = ("couldn't convert selector into a corresponding internal selector "
                       f"object: {err}")
            self._event(hpa, "Warning", "InvalidSelector", message)
            self._condition(hpa, ACTIVE, "False", "InvalidSelector", message)
            raise ComputeError(message, None, []) from err
        spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        specs = (hpa.get("spec") or {}).get("metrics") or []
        statuses: list[Obj] = []
        replicas, metric = 0, ""
        invalid, first_error, first_condition = 0, "", None
        for spec in specs:
            try:
                result = await self.compute_metric(hpa, spec, spec_replicas, text, selector)
            except _MetricFailure as failure:
                if invalid == 0:
                    first_error, first_condition = str(failure), failure.condition
                invalid += 1
                statuses.append({"type": ""})  # Go's zero MetricStatus
                continue
            statuses.append(result.status)
            if replicas == 0 or result.replicas > replicas:
                replicas, metric = result.replicas, result.name
        if invalid >= len(specs) or (invalid > 0 and replicas < spec_replicas):
            if first_condition is not None:
                self._condition(hpa, ACTIVE, *first_condition)
            raise ComputeError(f"invalid metrics ({invalid} invalid out of {len(specs)}), "
                               f"first error is: {first_error}", first_condition, statuses)
        self._condition(hpa, ACTIVE, "True", "ValidMetricFound",
                        f"the HPA was able to successfully calculate a replica count from "
                        f"{metric}")
        return replicas, metric, statuses

    async def compute_metric(self, hpa: Obj, spec: Obj, current: int, selector_text: str,
                             selector: Any) -> MetricResult:
        """``computeReplicasForMetric`` for one MetricSpec."""
        kind = spec.get("type")
        if kind in ("Resource", "ContainerResource"):
            field = "resource" if kind == "Resource" else "containerResource"
            source = spec.get(field) or {}
            name = str(source.get("name") or "")
            container = str(source.get("container") or "") if kind == "ContainerResource" \
                else ""
            reason = "FailedGetResourceMetric" if kind == "Resource" \
                else "FailedGetContainerResourceMetric"
            wrap = (f"failed to get {name} resource metric value" if kind == "Resource"
                    else f"failed to get {name} container metric value")
            try:
                proposal, label = await self._resource(hpa, source.get("target") or {}, name,
                                                       container, current, selector_text,
                                                       selector)
            except MetricsError as err:
                self._event(hpa, "Warning", reason, str(err))
                raise _MetricFailure(f"{wrap}: {err}", _unable(reason, str(err))) from err
            if container:
                label = label.replace(" resource ", " container resource ", 1)
            current_value: Obj = {"averageValue": milli_quantity(proposal.raw_average)}
            if proposal.utilization is not None:
                current_value = {"averageUtilization": proposal.utilization, **current_value}
            body: Obj = {"name": name, "current": current_value}
            if container:
                body = {"name": name, "container": container, "current": current_value}
            return MetricResult(proposal.replicas, label, {"type": kind, field: body})
        if kind in ("Pods", "Object", "External"):
            raise self._unserved(hpa, kind, spec, meta(hpa)["namespace"])
        message = f'unknown metric source type "{kind}"'
        self._event(hpa, "Warning", "InvalidMetricSourceType", message)
        raise _MetricFailure(message, _unable("InvalidMetricSourceType", message))

    async def _resource(self, hpa: Obj, target: Obj, name: str, container: str, current: int,
                        selector_text: str, selector: Any) -> tuple[Proposal, str]:
        """``computeStatusForResourceMetricGeneric``."""
        namespace = meta(hpa)["namespace"]
        pods = self.manager.cache.list_raw(POD, namespace=namespace, labels=selector)
        now = datetime.now(UTC)
        average_value = target.get("averageValue")
        if average_value is None and target.get("averageUtilization") is None:
            raise MetricsError("invalid resource metric source: neither an average "
                               "utilization target nor an average value (usage) target was "
                               "set")
        what = "usage" if average_value is not None else "utilization"
        try:
            try:
                metrics = await resource_metric(self._list_metrics, name, namespace,
                                                selector_text, container)
            except MetricsError as err:
                raise MetricsError(f"unable to get metrics for resource {name}: {err}") \
                    from err
            if average_value is not None:
                return (self.calculator.raw_resource_replicas(
                    current, milli(average_value), name, metrics, pods, now),
                    f"{name} resource")
            proposal = self.calculator.resource_replicas(
                current, int(target["averageUtilization"]), name, metrics, pods, container,
                now)
        except MetricsError as err:
            raise MetricsError(f"failed to get {name} {what}: {err}") from err
        return proposal, f"{name} resource utilization (percentage of request)"

    async def _list_metrics(self, namespace: str, selector: str) -> Obj:
        listed: Obj = await self.manager.client.request(
            "GET", f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods",
            params={"labelSelector": selector})
        return listed

    def _unserved(self, hpa: Obj, kind: str, spec: Obj, namespace: str) -> _MetricFailure:
        """A Pods, Object or External metric: no custom or external metrics API is
        registered, and the REST mapping of its list kind fails as it does in Go."""
        field = {"Pods": "pods", "Object": "object", "External": "external"}[kind]
        metric = str(((spec.get(field) or {}).get("metric") or {}).get("name") or "")
        if kind == "External":
            err = ('unable to fetch metrics from external metrics API: no matches for kind '
                   '"ExternalMetricValueList" in group "external.metrics.k8s.io"')
            inner = f"unable to get external metric {namespace}/{metric}/nil: {err}"
            reason, wrapped = "FailedGetExternalMetric", \
                f"failed to get {metric} external metric: {inner}"
        else:
            err = ('unable to fetch metrics from custom metrics API: no matches for kind '
                   '"MetricValueList" in group "custom.metrics.k8s.io"')
            inner = f"unable to get metric {metric}: {err}"
            reason = "FailedGetPodsMetric" if kind == "Pods" else "FailedGetObjectMetric"
            wrapped = (f"failed to get pods metric value: {inner}" if kind == "Pods"
                       else f"failed to get object metric value: {inner}")
        self._event(hpa, "Warning", reason, inner)
        return _MetricFailure(wrapped, _unable(reason, inner))

    # -- status ----------------------------------------------------------------------------

    def _condition(self, hpa: Obj, type_: str, status: str, reason: str, message: str) -> None:
        set_condition(hpa["status"]["conditions"], type_, status, reason=reason,
                      message=message)

    @staticmethod
    def _set_status(hpa: Obj, current: int, desired: int, statuses: list[Obj] | None, *,
                    rescale: bool) -> None:
        """``setStatus``: the replicas and metrics, conditions and lastScaleTime kept (the
        latter moved on a rescale)."""
        old = hpa.get("status") or {}
        status: Obj = {}
        if current:
            status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        if statuses:
            status["currentMetrics"] = statuses
        last = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if rescale \
            else old.get("lastScaleTime")
        if last:
            status["lastScaleTime"] = last
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        hpa["status"] = status

    async def _write_status(self, hpa: Obj, before: Mapping[str, Any]) -> None:
        """``updateStatusIfNeeded``: a full status update with the read resourceVersion."""
        if not hpa["status"].get("conditions"):
            hpa["status"].pop("conditions", None)
        if hpa["status"] == before:
            return
        try:
            self.manager.writer.record(await self.manager.client.update_status(hpa))
        except ApiError as err:
            self._event(hpa, "Warning", "FailedUpdateStatus", err.message)


class _MetricFailure(Exception):
    def __init__(self, message: str, condition: tuple[str, str, str]) -> None:
        super().__init__(message)
        self.condition = condition


def _scale_error(err: Exception, ref: Mapping[str, Any]) -> str:
    if isinstance(err, ApiError):
        return err.message or str(err)
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    return f'no matches for kind "{ref.get("kind")}" in group "{group}"'


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the horizontal pod autoscaler controller (events from
    ``horizontal-pod-autoscaler``)."""
    events = component_recorder(manager, COMPONENT)
    manager.add(Controller.for_(HPA, name="horizontal-pod-autoscaler")
                .reads(POD)
                .reconciler(HorizontalReconciler(manager, events, settings)))
