"""The horizontal pod autoscaler controller on the embedded cluster.

kube-controller-manager 1.32's pkg/controller/podautoscaler/horizontal.go (reconcileAutoscaler,
conditions, events), replica_calculator.go (GetResourceReplicas, the 0.1 tolerance) and
metrics/client.go (PodMetrics listed from metrics.k8s.io through the aggregator): the real
nodes, scheduler, kubelets, controllers and metrics-server of the workloads run here, with
the sync period and stabilization window shortened through WorkloadSettings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.workloads.controllers.hpa_behavior import (
    AutoscalerHistory,
    normalize,
    normalize_with_behavior,
)
from setpoint.workloads.manager import build_manager
from setpoint.workloads.settings import WorkloadSettings
from tests.conftest import kubectl_path
from tests.waiting import wait_for
from tests.workloads.metrics_server_support import metrics_api_served

HPA = Kind("autoscaling/v2", "HorizontalPodAutoscaler")
DEPLOYMENT = Kind("apps/v1", "Deployment")
EVENT = Kind("v1", "Event")
Obj = dict[str, Any]

FAST = WorkloadSettings(nodes=1, hpa_sync_period_seconds=0.3,
                        hpa_downscale_stabilization_seconds=0.0,
                        extra={"kubelet.metrics-window": "1s"})
"""Go's CPU initialization period (5m) and readiness delay: a new pod's CPU counts once a
sample was taken a whole metrics window (here 1 s) after it became ready."""


@dataclass
class Env:
    cluster: RunningCluster
    client: Client


@contextlib.asynccontextmanager
async def hpa_cluster(settings: WorkloadSettings = FAST) -> AsyncIterator[Env]:
    async with serve() as cluster, Client(load_kubeconfig(cluster.kubeconfig)) as client:
        manager = build_manager(client, settings)
        async with manager.running():
            # Until the metrics-server's APIService is Available the HPA's metrics client
            # gets NotFound (a real cluster's first syncs say so too); the tests are about
            # what it answers once metrics.k8s.io is served.
            await wait_for(lambda: metrics_api_served(client), timeout=60)
            yield Env(cluster, client)


def deployment(name: str, replicas: int, *, usage_cpu: str | None = None,
               node_selector: dict[str, str] | None = None) -> Obj:
    labels = {"app": name}
    annotations = {"sim.setpoint.dev/usage-cpu": usage_cpu} if usage_cpu else {}
    pod_spec: Obj = {"containers": [{"name": "c", "image": "nginx",
                                     "resources": {"requests": {"cpu": "100m"}}}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels, "annotations": annotations},
                                  "spec": pod_spec}}}


def autoscaler(name: str, minimum: int, maximum: int, percent: int = 50) -> Obj:
    """What ``kubectl autoscale deployment NAME --min --max --cpu-percent`` creates."""
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": name},
                     "minReplicas": minimum, "maxReplicas": maximum,
                     "targetCPUUtilizationPercentage": percent}}


def condition(hpa: Obj, type_: str) -> tuple[str, str, str] | None:
    for c in (hpa.get("status") or {}).get("conditions") or ():
        if c["type"] == type_:
            return c["status"], c["reason"], c["message"]
    return None


async def hpa_when(client: Client, name: str, check: Any, timeout: float = 60.0) -> Obj:
    async def probe() -> Obj | None:
        hpa: Obj = await client.get(HPA, name, namespace="default")
        return hpa if check(hpa) else None
    found: Obj = await wait_for(probe, timeout=timeout)
    return found


async def events_of(client: Client, name: str) -> list[tuple[str, str, str, str]]:
    listed = await client.list(EVENT, namespace="default",
                               field_selector=f"involvedObject.name={name},"
                                              "involvedObject.kind=HorizontalPodAutoscaler")
    return [(e["type"], e["reason"], e["message"], (e.get("source") or {}).get("component")
             or e.get("reportingComponent") or "") for e in listed.items]


def kubectl(env: Env, tmp: Path, *args: str) -> str:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    proc = subprocess.run(
        [kubectl_path(), "--kubeconfig", str(env.cluster.kubeconfig),
         "--cache-dir", str(tmp / "cache"), *args],
        capture_output=True, text=True, timeout=60, check=False,
        env={"HOME": str(home), "PATH": os.environ.get("PATH", "")})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_cpu_above_target_scales_up_to_max_with_go_status_and_events(
        tmp_path: Path) -> None:
    """Pods using 80% of their CPU request against a 50% target: the HPA scales the
    Deployment through its scale subresource (1 -> more, capped at maxReplicas 3), records
    SuccessfulRescale with Go's reason, and its status carries currentMetrics and the
    AbleToScale/ScalingActive/ScalingLimited conditions with horizontal.go's texts."""
    async with hpa_cluster() as env:
        client = env.client
        await client.create(deployment("web", 1, usage_cpu="80m"))
        await asyncio.to_thread(kubectl, env, tmp_path, "autoscale", "deployment", "web",
                                "--min=1", "--max=3", "--cpu-percent=50")

        def at_max(hpa: Obj) -> bool:
            status = hpa.get("status") or {}
            return status.get("currentReplicas") == 3 and \
                (condition(hpa, "ScalingLimited") or ("",))[0] == "True"
        hpa = await hpa_when(client, "web", at_max)
        status = hpa["status"]
        assert status["desiredReplicas"] == 3
        assert status["lastScaleTime"]
        assert status["currentMetrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": 80, "averageValue": "80m"}}}]
        assert condition(hpa, "ScalingActive") == (
            "True", "ValidMetricFound", "the HPA was able to successfully calculate a replica "
            "count from cpu resource utilization (percentage of request)")
        assert condition(hpa, "ScalingLimited") == (
            "True", "TooManyReplicas",
            "the desired replica count is more than the maximum replica count")
        assert condition(hpa, "AbleToScale")[0] == "True"  # type: ignore[index]
        scale = await client.get_scale(DEPLOYMENT, "web", namespace="default")
        assert scale["spec"]["replicas"] == 3

        async def rescaled() -> list[Any] | None:
            events = await events_of(client, "web")
            found = [e for e in events if e[1] == "SuccessfulRescale"]
            return [found] if found else None
        [found] = await wait_for(rescaled, timeout=30)
        assert found[0][0] == "Normal"
        assert found[0][2] == ("New size: 2; reason: cpu resource utilization (percentage of "
                               "request) above target")
        assert found[0][3] == "horizontal-pod-autoscaler"

        # kubectl's columns (pkg/printers/internalversion printHorizontalPodAutoscaler)
        out = await asyncio.to_thread(kubectl, env, tmp_path, "get", "hpa", "web")
        header, row = [line.split() for line in out.strip().splitlines()]
        assert header == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS",
                          "AGE"]
        assert row[:-1] == ["web", "Deployment/web", "cpu:", "80%/50%", "1", "3", "3"]


async def test_missing_metrics_report_scaling_active_false() -> None:
    """Pods that never run have no PodMetrics: metrics/client.go's "no metrics returned
    from resource metrics API", wrapped by replica_calculator.go and horizontal.go, in the
    ScalingActive condition (FailedGetResourceMetric) and the two Warning events."""
    async with hpa_cluster() as env:
        client = env.client
        await client.create(deployment("stuck", 2, node_selector={"nowhere": "true"}))
        await client.create(autoscaler("stuck", 1, 5))
        hpa = await hpa_when(client, "stuck",
                             lambda h: condition(h, "ScalingActive") is not None)
        inner = ("failed to get cpu utilization: unable to get metrics for resource cpu: "
                 "no metrics returned from resource metrics API")
        assert condition(hpa, "ScalingActive") == (
            "False", "FailedGetResourceMetric",
            f"the HPA was unable to compute the replica count: {inner}")
        assert condition(hpa, "AbleToScale") == (
            "True", "SucceededGetScale",
            "the HPA controller was able to get the target's current scale")
        assert hpa["status"]["currentReplicas"] == 2
        assert hpa["status"]["desiredReplicas"] == 0

        async def both() -> list[Any] | None:
            events = {(e[0], e[1], e[2]) for e in await events_of(client, "stuck")}
            return [events] if len(events) >= 2 else None
        [events] = await wait_for(both, timeout=30)
        assert events == {
            ("Warning", "FailedGetResourceMetric", inner),
            ("Warning", "FailedComputeMetricsReplicas",
             f"invalid metrics (1 invalid out of 1), first error is: failed to get cpu "
             f"resource metric value: {inner}")}
        scale = await client.get_scale(DEPLOYMENT, "stuck", namespace="default")
        assert scale["spec"]["replicas"] == 2


async def test_below_min_keeps_min_replicas_and_sets_scaling_limited() -> None:
    """Pods using 10% of their request (the simulated default) against 50% propose one
    replica; minReplicas 2 holds (convertDesiredReplicasWithRules: TooFewReplicas)."""
    async with hpa_cluster() as env:
        client = env.client
        await client.create(deployment("idle", 2))
        await client.create(autoscaler("idle", 2, 4))
        # while a new pod has no metrics yet it counts as using its whole request on a
        # scale-down (replica_calculator.go), which keeps the count: wait for both samples
        hpa = await hpa_when(client, "idle", lambda h: (condition(h, "ScalingLimited")
                                                        or ("", ""))[1] == "TooFewReplicas")
        assert condition(hpa, "ScalingLimited") == (
            "True", "TooFewReplicas",
            "the desired replica count is less than the minimum replica count")
        assert hpa["status"]["desiredReplicas"] == 2
        assert hpa["status"]["currentMetrics"][0]["resource"]["current"] == {
            "averageUtilization": 10, "averageValue": "10m"}
        assert "lastScaleTime" not in hpa["status"]


def test_downscale_is_stabilized_over_the_window() -> None:
    """horizontal.go stabilizeRecommendation: a scale-down keeps the highest
    recommendation of the window (ScaleDownStabilized), then follows once it passed."""
    history = AutoscalerHistory()
    history.record_initial(4, now=0.0)
    held = normalize(history, 4, 1, 1, 10, downscale_window=300.0, now=10.0)
    assert (held.replicas, held.able_to_scale[0]) == (4, "ScaleDownStabilized")
    later = normalize(history, 4, 1, 1, 10, downscale_window=300.0, now=400.0)
    assert (later.replicas, later.able_to_scale[0]) == (1, "ReadyForNewScale")
    # scale-up is capped at max(2 * current, 4) (ScaleUpLimit)
    fast = normalize(AutoscalerHistory(), 3, 20, 1, 30, downscale_window=0.0, now=0.0)
    assert (fast.replicas, fast.limited, fast.limited_reason[0]) == (6, True, "ScaleUpLimit")


def test_behavior_policies_limit_the_rate() -> None:
    """horizontal.go convertDesiredReplicasWithBehaviorRate: a Pods policy of 1 per 60 s
    lets one pod be added per period, counting the scale events of the period."""
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
                "scaleDown": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                              "policies": [{"type": "Percent", "value": 100,
                                            "periodSeconds": 15}]}}
    history = AutoscalerHistory()
    first = normalize_with_behavior(history, behavior, 2, 8, 1, 10, 300.0, now=0.0)
    assert (first.replicas, first.limited_reason[0]) == (3, "ScaleUpLimit")
    history.store_scale_event(behavior, 2, 3, now=0.0)
    again = normalize_with_behavior(history, behavior, 3, 8, 1, 10, 300.0, now=30.0)
    assert again.replicas == 3  # the period's one pod is used up
    after = normalize_with_behavior(history, behavior, 3, 8, 1, 10, 300.0, now=61.0)
    assert after.replicas == 4
