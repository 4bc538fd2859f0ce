"""Faults on demand: restart a container, fail a pod, delay readiness (API and CLI)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from setpoint.client import NotFoundError
from setpoint.workloads import faults
from setpoint.workloads.podcli import pod as pod_cli
from tests.waiting import quiet_period
from tests.workloads.metrics_server_support import metrics_env
from tests.workloads.test_kubelet_support import (
    POD,
    condition,
    kubelet_env,
    phase,
    pod,
    ready,
    statuses,
    wait_for,
)

Obj = dict[str, Any]


async def _collect(env: Any, name: str, until: Any, into: list[Obj]) -> None:
    """Watch ``name`` from now, keeping every version, until ``until(obj)``."""
    rv = (await env.get(name))["metadata"]["resourceVersion"]
    async with env.client.watch(POD, namespace="default", name=name,
                                resource_version=rv) as events:
        async for _, obj in events:
            into.append(obj)
            if until(obj):
                return


async def test_restart_fault_restarts_the_container_and_ready_drops_then_returns() -> None:
    async with kubelet_env() as env:
        await env.run(pod("web", "web", "log"))
        before = await env.until("web", ready)
        old_id = statuses(before)["web"]["containerID"]
        seen: list[Obj] = []
        watcher = asyncio.create_task(_collect(
            env, "web", lambda p: statuses(p)["web"]["restartCount"] == 1 and ready(p), seen))
        after = await faults.restart_container(env.client, "web", container="web")
        await asyncio.wait_for(watcher, 30)
        web = statuses(after)["web"]
        assert web["restartCount"] == 1
        assert web["containerID"] != old_id
        terminated = web["lastState"]["terminated"]
        assert terminated["exitCode"] == 137 and terminated["reason"] == "Error"
        assert terminated["containerID"] == old_id
        assert statuses(after)["log"]["restartCount"] == 0  # only the one asked for
        assert "sim.setpoint.dev/restart" not in after["metadata"].get("annotations", {})
        readiness = [ready(p) for p in seen]
        assert False in readiness and readiness[-1] is True  # dropped, then came back
        dropped = next(p for p in seen if not ready(p))
        assert condition(dropped, "Ready")["message"] == "containers with unready status: [web]"
        assert "terminated" in statuses(dropped)["web"]["state"]
        assert phase(dropped) == "Running"


async def test_restart_fault_on_every_container() -> None:
    async with kubelet_env() as env:
        await env.run(pod("both", "a", "b"))
        await env.until("both", ready)
        after = await faults.restart_container(env.client, "both")
        assert {n: s["restartCount"] for n, s in statuses(after).items()} == {"a": 1, "b": 1}
        await env.until("both", ready)


async def test_fail_fault_fails_the_pod_with_the_reason_given() -> None:
    async with kubelet_env() as env:
        await env.run(pod("doomed"))
        await env.until("doomed", ready)
        failed = await faults.fail_pod(env.client, "doomed", reason="Evicted",
                                       message="The node was low on resource: memory.")
        assert phase(failed) == "Failed"
        assert failed["status"]["reason"] == "Evicted"
        assert failed["status"]["message"] == "The node was low on resource: memory."
        assert statuses(failed)["app"]["state"]["terminated"]["exitCode"] == 137
        assert condition(failed, "Ready")["reason"] == "PodFailed"
        assert condition(failed, "PodReadyToStartContainers")["status"] == "False"
        # a failed pod stays failed: a later restart request changes nothing
        await faults.restart_container(env.client, "doomed", wait=False)
        await quiet_period()  # a (wrong) restart had time to happen
        assert statuses(await env.get("doomed"))["app"]["restartCount"] == 0


async def test_delay_readiness_before_the_pod_starts() -> None:
    async with kubelet_env() as env:
        created = await env.client.create(pod("later"))
        assert created
        await faults.delay_readiness(env.client, "later", delay=0.4)
        await env.run_bound("later")
        running = await env.until("later", lambda p: phase(p) == "Running")
        assert not ready(running)
        await env.until("later", ready)


async def test_usage_fault_sets_the_pods_metrics(tmp_path: Path) -> None:
    async with metrics_env() as (env, reader):
        await env.run(pod("busy"))
        await env.until("busy", ready)
        await faults.set_usage(env.client, "busy", cpu="250m", memory="128Mi")

        async def usage() -> Obj | None:
            try:
                got = await reader.get(
                    "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy")
            except NotFoundError:  # the kubelets publish pod metrics a moment later
                return None
            used = got["containers"][0]["usage"]
            return used if used == {"cpu": "250000000n", "memory": "131072Ki"} else None

        await wait_for(usage)


def _cli(*args: str) -> Any:
    return CliRunner().invoke(pod_cli, list(args), catch_exceptions=False)


async def test_pod_cli_restarts_and_fails_pods() -> None:
    async with kubelet_env() as env:
        await env.run(pod("cli"))
        await env.until("cli", ready)
        kubeconfig = str(env.cluster.kubeconfig)
        result = await asyncio.to_thread(_cli, "restart", "cli", "-c", "app",
                                         "--kubeconfig", kubeconfig)
        assert result.exit_code == 0, result.output
        assert "pod/cli restarted (restarts: app=1)" in result.output
        result = await asyncio.to_thread(_cli, "fail", "cli", "--reason", "Evicted",
                                         "--kubeconfig", kubeconfig)
        assert result.exit_code == 0, result.output
        assert "pod/cli failed (Evicted)" in result.output
        result = await asyncio.to_thread(_cli, "restart", "missing", "--kubeconfig", kubeconfig)
        assert result.exit_code == 1
        assert 'pods "missing" not found' in result.output


async def test_kubelet_events_come_from_the_pods_node() -> None:
    async with kubelet_env() as env:
        await env.run(pod("noisy"), "node-b")
        await env.until("noisy", ready)
        await faults.restart_container(env.client, "noisy")

        async def killing() -> Obj | None:
            listed = await env.client.request(
                "GET", "/apis/events.k8s.io/v1/namespaces/default/events")
            return next((e for e in listed["items"] if e["reason"] == "Killing"), None)

        event = await wait_for(killing)
        assert event["reportingController"] == "kubelet"
        assert event["reportingInstance"] == "node-b"
        assert event["regarding"]["name"] == "noisy"
        assert event["note"] == ("Container app was killed by a simulated fault, will be "
                                 "restarted")


async def test_waiting_on_a_pod_that_is_deleted_raises_not_found() -> None:
    """A pod deleted while a fault helper waits on it ends the wait with the 404 a read of it
    would get (``apierrors.NewNotFound``, k8s.io/apimachinery/pkg/api/errors/errors.go)."""
    async with kubelet_env() as env:
        await env.client.create(pod("gone"))
        read = asyncio.Event()

        def never(p: Obj) -> bool:
            read.set()  # the helper has read the pod: it watches from that version
            return False

        waiting = asyncio.create_task(
            faults.wait_for_pod(env.client, "gone", "default", never, timeout=30))
        await asyncio.wait_for(read.wait(), 30)
        await env.client.delete(POD, "gone", namespace="default", grace_period_seconds=0)
        with pytest.raises(NotFoundError) as caught:
            await waiting
        assert (caught.value.code, caught.value.reason) == (404, "NotFound")
        assert str(caught.value) == 'pods "gone" not found'
