"""What a real kubelet (1.32, containerd) answers when it refuses a stream or a log, and the
texts of its probe failures and start failures, through real kubectl or the API.

Sources (kubernetes v1.32): pkg/kubelet/kubelet_pods.go (GetExec, GetAttach,
validateContainerLogStatus), pkg/kubelet/server/server.go (errors of getExec/getAttach go
out through streaming.WriteError, log errors as 400s), pkg/probe/exec/exec.go,
pkg/probe/http/http.go, pkg/probe/tcp/tcp.go, k8s.io/cri-client remote_runtime.go
(ExecSync's ``command %q timed out``), pkg/kubelet/kuberuntime/kuberuntime_container.go
(startContainer's ErrRunContainer) and convertToAPIContainerStatuses (the reason cache).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from pathlib import Path
from typing import Any

import pytest

from setpoint.client import Kind
from setpoint.workloads.kubelet.process import spawn
from tests.waiting import wait_for
from tests.workloads.process.support import Kubectl, need, process_env
from tests.workloads.test_kubelet_support import pod


def busybox(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1.36", "command": ["sh", "-c", script], **extra}


def statuses(p: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status = p.get("status") or {}
    return {s["name"]: s for kind in ("initContainerStatuses", "containerStatuses")
            for s in status.get(kind) or ()}


async def test_streams_and_logs_of_containers_that_are_not_running(tmp_path: Path) -> None:
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, None)
        two = pod("two")
        two["spec"]["restartPolicy"] = "Never"
        two["spec"]["containers"] = [busybox("main", "echo a; sleep 3600"),
                                     busybox("side", "echo s")]
        await env.run(two)
        held = pod("held")
        held["spec"]["initContainers"] = [busybox("init", "sleep 3600")]
        held["spec"]["containers"] = [busybox("main", "sleep 3600")]
        await env.run(held)
        await env.until("two", lambda p: "terminated" in (
            statuses(p).get("side", {}).get("state") or {}) and "running" in (
            statuses(p).get("main", {}).get("state") or {}))
        await env.until("held", lambda p: "running" in (
            statuses(p).get("init", {}).get("state") or {}))

        # GetExec: only running containers are found -> "container not found (%q)"
        code, _, err = await kubectl.run("exec", "two", "-c", "side", "--", "true")
        assert code != 0
        assert 'error: unable to upgrade connection: container not found ("side")' in err
        # GetAttach: "container %s not found in pod %s" with the pod's full name
        code, _, err = await kubectl.run("attach", "two", "-c", "side")
        assert code != 0
        assert "unable to upgrade connection: container side not found in pod " \
            "two_default" in err, err
        # kube-apiserver's streamLocation (pkg/registry/core/pod/strategy.go)
        code, _, err = await kubectl.run("exec", "two", "-c", "nope", "--", "true")
        assert "Error from server (BadRequest): container nope is not valid for pod two" in err

        # validateContainerLogStatus, from the pod's status
        code, _, err = await kubectl.run("logs", "held", "-c", "main")
        assert code != 0
        assert 'Error from server (BadRequest): container "main" in pod "held" is waiting ' \
            "to start: PodInitializing" in err, err
        code, _, err = await kubectl.run("logs", "two", "-c", "main", "--previous")
        assert 'previous terminated container "main" in pod "two" not found' in err
        # a terminated container's log is served (its own ID), flags as the kubelet reads
        assert await kubectl.ok("logs", "two", "-c", "side") == "s\n"
        assert await kubectl.ok("logs", "two", "-c", "main", "--limit-bytes=1") == "a"
        assert await kubectl.ok("logs", "two", "-c", "main",
                                "--since-time=2099-01-01T00:00:00Z") == ""
        stamped = await kubectl.ok("logs", "two", "-c", "main", "--timestamps")
        assert stamped.endswith("Z a\n"), stamped


async def test_probe_failure_texts_and_start_failures(tmp_path: Path) -> None:
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        probed = pod("probed")
        probed["spec"]["containers"] = [
            busybox("c", "sleep 3600",
                    livenessProbe={"exec": {"command": ["sleep", "5"]}, "timeoutSeconds": 1,
                                   "periodSeconds": 1, "failureThreshold": 100},
                    readinessProbe={"exec": {"command": ["sh", "-c", "echo nope; exit 1"]},
                                    "periodSeconds": 1}),
            busybox("d", "sleep 3600",
                    readinessProbe={"tcpSocket": {"port": 81}, "periodSeconds": 1},
                    livenessProbe={"httpGet": {"port": 82, "path": "/x"}, "periodSeconds": 1,
                                   "failureThreshold": 100})]
        await env.run(probed)
        bad = pod("bad")
        bad["spec"]["containers"] = [{"name": "c", "image": "busybox:1.36",
                                      "command": ["nosuchprog"]}]
        await env.run(bad)
        reasons: list[str] = []
        messages: list[str] = []

        def record(p: dict[str, Any]) -> bool:
            waiting = (statuses(p).get("c", {}).get("state") or {}).get("waiting") or {}
            if waiting.get("reason") and (not reasons or reasons[-1] != waiting["reason"]):
                reasons.append(waiting["reason"])
            if waiting.get("reason") == "RunContainerError":
                messages.append(waiting.get("message", ""))
            return "CrashLoopBackOff" in reasons

        live = await env.until("bad", record, timeout=60)
        # the first failure is shown as RunContainerError (message: the runtime's), then
        # the back-off as CrashLoopBackOff, the exit kept in lastState
        assert "RunContainerError" in reasons, reasons
        assert reasons.index("RunContainerError") < reasons.index("CrashLoopBackOff")
        last = statuses(live)["c"]["lastState"]["terminated"]
        assert (last["reason"], last["exitCode"]) == ("StartError", 128)
        assert messages[0] == last["message"] and messages[0].endswith(
            'exec: "nosuchprog": executable file not found in $PATH: unknown'), messages

        pod_ip = (await env.client.get(Kind("v1", "Pod"), "probed", namespace="default")
                  )["status"]["podIP"]
        wanted = {
            "Liveness probe failed: command \"sleep 5\" timed out",
            "Readiness probe failed: nope\n",
            f"Readiness probe failed: dial tcp {pod_ip}:81: connect: connection refused",
            f'Liveness probe failed: Get "http://{pod_ip}:82/x": dial tcp {pod_ip}:82: '
            "connect: connection refused",
        }

        async def unhealthy() -> set[str] | None:
            events = await env.client.list(Kind("v1", "Event"), namespace="default")
            seen = {e.get("message", "") for e in events.items
                    if e.get("reason") == "Unhealthy"}
            assert wanted <= seen, seen
            return seen

        await wait_for(unhealthy, timeout=60)


async def test_port_forward_to_a_port_nothing_listens_on(tmp_path: Path) -> None:
    """kubectl is told the streaming server's ``error forwarding port ...`` around
    containerd's ``failed to execute portforward in network namespace ...`` (see
    setpoint/workloads/kubelet/process/portforward.py forward_error)."""
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, None)
        quiet = pod("quiet")
        quiet["spec"]["containers"] = [busybox("main", "sleep 3600")]
        await env.run(quiet)
        await env.until("quiet", lambda p: "running" in (
            statuses(p).get("main", {}).get("state") or {}))
        forward = await kubectl.start("port-forward", "--address", "127.0.0.1", "pod/quiet",
                                      ":81")
        try:
            assert forward.stdout is not None and forward.stderr is not None
            seen = b""
            async with asyncio.timeout(30):
                while b"-> 81" not in seen:
                    seen += await forward.stdout.readline()
            match = re.search(rb"127\.0\.0\.1:(\d+) -> 81", seen)
            assert match, seen
            reader, writer = await asyncio.open_connection("127.0.0.1", int(match.group(1)))
            with contextlib.suppress(OSError):
                async with asyncio.timeout(30):
                    await reader.read()  # kubectl hangs up once the kubelet says why
            writer.close()
            err = b""
            async with asyncio.timeout(30):
                while b"connection refused IPv6" not in err:
                    line = await forward.stderr.readline()
                    assert line, err
                    err += line
        finally:
            if forward.returncode is None:
                forward.kill()
            await forward.wait()
        text = err.decode().replace('\\"', '"')  # klog quotes the error as err="..."
        assert re.search(r'error forwarding port 81 to pod [0-9a-f]{64}, uid : failed to '
                         r'execute portforward in network namespace "host": failed to '
                         r'connect to localhost:81 inside namespace "[0-9a-f]{64}", IPv4: '
                         r"dial tcp4 127\.\d+\.\d+\.\d+:81: connect: connection refused",
                         text), text


async def test_a_mount_the_container_setup_cannot_make_says_which_and_why(
        tmp_path: Path) -> None:
    """A file (a ConfigMap key by ``subPath``) mounted on a directory cannot be bound: the
    start fails as runc's init does, naming the mount and the system's error
    (libcontainer/rootfs_linux.go prepareRootfs: ``error mounting %q to rootfs at %q: %w``,
    wrapped by process_linux.go as ``error during container init``), not Python's bare
    "Exception occurred in preexec_fn."."""
    need("busybox", "busybox")
    if os.geteuid() != 0:
        pytest.skip("no mount namespaces without root: nothing is bound in the child")
    target = tmp_path / "a-directory"
    target.mkdir()
    async with process_env(tmp_path) as env:
        await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "cfg", "namespace": "default"},
                                 "data": {"key": "value"}})
        body = pod("onto")
        body["spec"]["containers"] = [busybox("c", "sleep 3600", volumeMounts=[
            {"name": "cfg", "mountPath": str(target), "subPath": "key"}])]
        body["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "cfg"}}]
        await env.run(body)

        def started_and_failed(p: dict[str, Any]) -> bool:
            last = (statuses(p).get("c", {}).get("lastState") or {}).get("terminated")
            return bool(last and last.get("reason") == "StartError")

        live = await env.until("onto", started_and_failed, timeout=60)
        last = statuses(live)["c"]["lastState"]["terminated"]
        assert last["exitCode"] == 128
        assert re.fullmatch(
            r"failed to create containerd task: failed to create shim task: OCI runtime "
            r"create failed: runc create failed: unable to start container process: error "
            r'during container init: error mounting ".*/key" to rootfs at '
            + re.escape(f'"{target}"') + r": bind: not a directory: unknown",
            last["message"]), last["message"]


async def test_a_missing_mount_source_fails_the_start_and_makes_no_mount_point(
        tmp_path: Path) -> None:
    """A bind whose source went (a volume directory removed after the container was
    configured) fails with the source's stat error, and leaves no mount point behind: made
    as a file on the machine, outside every pod's cleanup, it would have failed each later
    directory bound there with "not a directory"."""
    need("true", "coreutils")
    if not spawn.mount_namespaces_available():
        pytest.skip("no mount namespaces without root: nothing is bound in the child")
    source, point = tmp_path / "gone", tmp_path / "point"
    with pytest.raises(spawn.ContainerInitError) as failed:
        await spawn.start_container_process(
            ["true"], spawn.preexec([(str(source), str(point), False)], isolate=True))
    assert spawn.start_error_message("true", failed.value).endswith(
        f'unable to start container process: error during container init: error mounting '
        f'"{source}" to rootfs at "{point}": stat {source}: no such file or directory: '
        "unknown")
    assert not os.path.lexists(point)
