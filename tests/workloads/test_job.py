"""Jobs: completions, parallelism, indexes, back-off limits and the status they report."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

from setpoint.client import Client, Kind, NotFoundError
from setpoint.runtime import Manager
from setpoint.workloads.controllers import job as job_controller
from setpoint.workloads.settings import WorkloadSettings
from tests.workloads.podsim import WorkloadEnv, running_status, wait_for, workload_cluster

JOB = Kind("batch/v1", "Job")
POD = Kind("v1", "Pod")
NS = "default"


def install_fast(manager: Manager, settings: Any) -> None:
    """The Job controller with a short failure back-off (tests should not wait 10 s)."""
    job_controller.install(manager, WorkloadSettings(extra={"job_pod_backoff_seconds": "0.05"}))


@contextlib.asynccontextmanager
async def env_() -> AsyncIterator[WorkloadEnv]:
    """The Job controller and a stand-in kubelet that starts every new pod (Running, Ready)
    and leaves finished pods alone, so that tests decide when pods succeed or fail."""
    async with workload_cluster([install_fast], simulate=False) as env:
        task = asyncio.create_task(_start_pods(env.client))
        try:
            yield env
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _start_pods(client: Client) -> None:
    ips = (f"10.244.1.{i}" for i in itertools.count(1))
    async with client.watch(POD, namespace=NS) as watch:
        async for event_type, pod in watch:
            status = pod.get("status") or {}
            if event_type == "ADDED" and status.get("phase") == "Pending":
                with contextlib.suppress(NotFoundError):
                    await client.patch_status(POD, pod["metadata"]["name"], {
                        "status": running_status(pod, next(ips))}, namespace=NS)


def job(name: str = "pi", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox"}]}}, **spec}}


async def job_pods(client: Client, name: str = "pi") -> list[dict[str, Any]]:
    items = (await client.list(POD, namespace=NS,
                               label_selector=f"batch.kubernetes.io/job-name={name}")).items
    return list(items)


async def running(client: Client, n: int) -> list[dict[str, Any]] | None:
    pods = [p for p in await job_pods(client)
            if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]
    return pods if len(pods) == n else None


async def finish(client: Client, pod: dict[str, Any], phase: str = "Succeeded") -> None:
    """What the kubelet reports when the pod's containers exit."""
    with contextlib.suppress(NotFoundError):
        await client.patch_status(POD, pod["metadata"]["name"], {"status": {
            "phase": phase, "conditions": [{"type": "Ready", "status": "False"}]}},
            namespace=NS)


async def job_status(client: Client, name: str = "pi") -> dict[str, Any]:
    return dict((await client.get(JOB, name, namespace=NS)).get("status") or {})


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


async def test_completions_with_parallelism_complete_the_job() -> None:
    async with env_() as env:
        await env.client.create(job(completions=3, parallelism=2))
        pods = await wait_for(lambda: running(env.client, 2))
        pod = pods[0]
        assert "batch.kubernetes.io/job-tracking" in pod["metadata"]["finalizers"]
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "pi"
        assert pod["metadata"]["generateName"] == "pi-"
        status = await wait_for(lambda: _status_is(env.client, active=2, ready=2))
        assert status["startTime"]
        for p in pods:
            await finish(env.client, p)
        last = await wait_for(lambda: running(env.client, 1))
        await finish(env.client, last[0])
        status = await wait_for(lambda: _status_has(env.client, "completionTime"))
        assert status["succeeded"] == 3
        assert "active" not in status and "failed" not in status
        assert status["ready"] == 0 and status["terminating"] == 0
        assert status["uncountedTerminatedPods"] == {}
        found = conditions(status)
        assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
        for type_ in ("SuccessCriteriaMet", "Complete"):
            assert found[type_]["status"] == "True"
            assert found[type_]["reason"] == "CompletionsReached"
            assert found[type_]["message"] == "Reached expected number of succeeded pods"

        async def finalizers_gone() -> bool:
            return all(not p["metadata"].get("finalizers") for p in await job_pods(env.client))

        await wait_for(finalizers_gone)


async def test_backoff_limit_fails_the_job() -> None:
    async with env_() as env:
        await env.client.create(job(backoffLimit=1))
        for _ in range(2):
            pods = await wait_for(lambda: running(env.client, 1))
            await finish(env.client, pods[0], "Failed")
        status = await wait_for(lambda: _condition(env.client, "Failed"))
        assert status["failed"] == 2
        found = conditions(status)
        assert found["FailureTarget"]["reason"] == "BackoffLimitExceeded"
        assert found["Failed"]["reason"] == "BackoffLimitExceeded"
        assert found["Failed"]["message"] == "Job has reached the specified backoff limit"
        assert "completionTime" not in status


async def test_indexed_job_gives_each_pod_an_index_and_tracks_completed_indexes() -> None:
    async with env_() as env:
        await env.client.create(job(completions=3, parallelism=3, completionMode="Indexed"))
        pods = await wait_for(lambda: running(env.client, 3))
        by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p
                    for p in pods}
        assert sorted(by_index) == ["0", "1", "2"]
        pod = by_index["1"]
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"
        assert pod["metadata"]["generateName"] == "pi-1-"
        assert pod["spec"]["hostname"] == "pi-1"
        assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1",
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}} \
            in pod["spec"]["containers"][0]["env"]
        await finish(env.client, by_index["0"])
        await finish(env.client, by_index["2"])
        status = await wait_for(lambda: _status_has(env.client, "completedIndexes", "0,2"))
        assert status["succeeded"] == 2
        await finish(env.client, by_index["1"])
        status = await wait_for(lambda: _condition(env.client, "Complete"))
        assert status["completedIndexes"] == "0-2"


def test_completed_indexes_are_written_as_ranges() -> None:
    assert job_controller.format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert job_controller.parse_indexes("0-2,4,6-7") == {0, 1, 2, 4, 6, 7}


async def _status_has(client: Client, key: str, value: Any = None) -> dict[str, Any] | None:
    status = await job_status(client)
    if key not in status or (value is not None and status[key] != value):
        return None
    return status


async def _status_is(client: Client, **wanted: Any) -> dict[str, Any] | None:
    status = await job_status(client)
    return status if all(status.get(k) == v for k, v in wanted.items()) else None


async def _condition(client: Client, type_: str) -> dict[str, Any] | None:
    status = await job_status(client)
    found = conditions(status).get(type_)
    return status if found and found["status"] == "True" else None
