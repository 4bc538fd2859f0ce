"""Container lifecycle on the process runtime, with real programs: back-off, probes,
volumes, termination (pkg/kubelet/kuberuntime/kuberuntime_container.go, prober/, volume/)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import shutil
from pathlib import Path
from typing import Any

from setpoint.client import Kind
from setpoint.workloads.kubelet import KubeletOptions
from setpoint.workloads.kubelet.podstatus import FALLBACK_CONDITION
from tests.waiting import wait_for
from tests.workloads.process.support import FAST, Kubectl, need, process_env, runtime_of
from tests.workloads.test_kubelet_support import Env, condition, pod, ready, statuses

CONFIGMAP = Kind("v1", "ConfigMap")
Obj = dict[str, Any]


def shell_pod(name: str, script: str, **container: Any) -> Obj:
    body = pod(name)
    body["spec"]["containers"] = [{"name": "app", "image": "busybox:1.36",
                                   "command": ["sh", "-c", script], **container}]
    return body


def open_logs(directory: Path) -> list[str]:
    """The files under ``directory`` this process has open for reading (proc(5): the
    access mode in the low bits of fdinfo's octal ``flags``; 0 is O_RDONLY)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            flags = (Path("/proc/self/fdinfo") / fd.name).read_text().split("flags:")[1]
            if target.startswith(str(directory)) and int(flags.split()[0], 8) & 3 == 0:
                found.append(target)
    return found


async def exec_in(env: Env, name: str, *command: str) -> tuple[int, str]:
    runtime = runtime_of(env)
    [container] = [c for c in runtime.find("default", name, "app") if c.finished_at is None]
    code, out = await runtime.exec_sync(container.id, list(command), 10.0)
    return code, out.decode()


async def test_configmap_update_reaches_the_mounted_file_through_the_data_symlink(
        tmp_path: Path) -> None:
    """The kubelet's AtomicWriter swap (pkg/volume/util/atomic_writer.go): ``..data``."""
    need("sh", "busybox")
    async with process_env(tmp_path) as env:
        await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "cfg", "namespace": "default"},
                                 "data": {"greeting": "hello"}})
        body = shell_pod("reader", "sleep 3600",
                         volumeMounts=[{"name": "cfg", "mountPath": "/etc/setpoint-test-cfg"}])
        body["spec"]["volumes"] = [{"name": "cfg", "configMap": {"name": "cfg"}}]
        await env.run(body)
        await env.until("reader", ready)
        assert await exec_in(env, "reader", "cat", "/etc/setpoint-test-cfg/greeting") == \
            (0, "hello")
        await env.client.patch(CONFIGMAP, "cfg", {"data": {"greeting": "bonjour"}},
                               namespace="default")

        async def updated() -> bool:
            return await exec_in(env, "reader", "cat", "/etc/setpoint-test-cfg/greeting") \
                == (0, "bonjour")
        await wait_for(updated)
        code, link = await exec_in(env, "reader", "readlink",
                                   "/etc/setpoint-test-cfg/greeting")
        assert (code, link.strip()) == (0, "..data/greeting")


async def test_crashing_container_enters_crashloopbackoff_with_doubling_delays(
        tmp_path: Path) -> None:
    """kuberuntime's back-off: the first restart at once, then base, 2x base, 4x base."""
    need("sh", "busybox")
    options = KubeletOptions(grace_cap=1.0, backoff_base=1.0, backoff_cap=8.0)
    async with process_env(tmp_path, options) as env:
        await env.run(shell_pod("crash", "echo dying; exit 3"))
        seen: list[str] = []

        async def crashed_often() -> bool:
            cs = statuses(await env.get("crash")).get("app") or {}
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff":
                message = waiting["message"].split(" restarting")[0]
                if message not in seen:
                    seen.append(message)
                assert cs["lastState"]["terminated"]["exitCode"] == 3
                assert cs["lastState"]["terminated"]["reason"] == "Error"
            return int(cs.get("restartCount") or 0) >= 4 and len(seen) >= 3
        await wait_for(crashed_often, timeout=60)
        assert seen[:3] == ["back-off 1s", "back-off 2s", "back-off 4s"]


async def test_failing_liveness_probe_restarts_the_container(tmp_path: Path) -> None:
    need("sh", "busybox")
    async with process_env(tmp_path) as env:
        body = shell_pod("sick", "sleep 3600", livenessProbe={
            "exec": {"command": ["test", "!", "-e", "sick"]}, "periodSeconds": 1,
            "failureThreshold": 1})
        body["spec"]["terminationGracePeriodSeconds"] = 1
        await env.run(body)
        await env.until("sick", ready)
        assert await exec_in(env, "sick", "touch", "sick") == (0, "")
        live = await env.until("sick", lambda p: statuses(p)["app"]["restartCount"] >= 1)
        assert statuses(live)["app"]["lastState"]["terminated"]["exitCode"] in (137, 143)
        events = await env.client.list(Kind("v1", "Event"), namespace="default")
        reasons = {e.get("reason") for e in events.items}
        assert {"Unhealthy", "Killing"} <= reasons


async def test_exec_readiness_probe_decides_readiness(tmp_path: Path) -> None:
    need("sh", "busybox")
    async with process_env(tmp_path) as env:
        await env.run(shell_pod("gate", "sleep 3600", readinessProbe={
            "exec": {"command": ["test", "-e", "ready-now"]}, "periodSeconds": 1}))
        await env.until("gate", lambda p: statuses(p).get("app", {}).get("started") is True)
        assert not ready(await env.get("gate"))
        assert await exec_in(env, "gate", "touch", "ready-now") == (0, "")
        await env.until("gate", ready)


async def test_pvc_data_survives_pod_deletion(tmp_path: Path) -> None:
    """The claim's directory outlives the pod that wrote it; the mount point made on this
    machine for the first pod, kept while the second mounts there, is removed once no
    container does (the point lives under the test's tmp dir: nothing outside it)."""
    need("sh", "busybox")
    mounts = tmp_path / "mounts"
    data = mounts / "data"
    async with process_env(tmp_path) as env:
        await env.client.create({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-data"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": str(tmp_path / "unused")},
                     "storageClassName": "manual"}})
        await env.client.create({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                     "volumeName": "pv-data", "resources": {"requests": {"storage": "1Gi"}}}})
        for name, script in (("writer", f"echo kept > {data}/file; sleep 3600"),
                             ("reader", "sleep 3600")):
            body = shell_pod(name, script,
                             volumeMounts=[{"name": "data", "mountPath": str(data)}])
            body["spec"]["volumes"] = [{"name": "data",
                                        "persistentVolumeClaim": {"claimName": "data"}}]
            body["spec"]["terminationGracePeriodSeconds"] = 0
            await env.run(body)
            await env.until(name, ready)
            if name == "writer":
                async def written() -> bool:
                    return (await exec_in(env, "writer", "test", "-e", f"{data}/file"))[0] == 0

                await wait_for(written)
                await env.client.delete(Kind("v1", "Pod"), "writer", namespace="default")
                await wait_for(lambda: "writer" not in str(runtime_of(env)._sandboxes))
        assert await exec_in(env, "reader", "cat", f"{data}/file") == (0, "kept\n")
    assert not mounts.exists()
    assert not (tmp_path / "unused").exists()


async def test_a_mount_point_kept_for_another_pods_container_goes_with_the_last_one(
        tmp_path: Path) -> None:
    """A mount point made on this machine for one pod stays while another pod's container
    mounts there (removing it would detach that mount), and is removed with that pod."""
    need("sh", "busybox")
    point = tmp_path / "shared-point"
    async with process_env(tmp_path) as env:
        for name in ("first", "second"):
            body = shell_pod(name, "sleep 3600",
                             volumeMounts=[{"name": "scratch", "mountPath": str(point)}])
            body["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
            body["spec"]["terminationGracePeriodSeconds"] = 0
            await env.run(body)
            await env.until(name, ready)
        for name in ("first", "second"):
            sandbox = runtime_of(env).sandbox_of("default", name)
            assert sandbox is not None
            await env.client.delete(Kind("v1", "Pod"), name, namespace="default")
            directory = sandbox.dir
            await wait_for(lambda: not directory.exists())  # noqa: B023 (awaited here)
            # (the sandbox's directory goes last, after its mount points)
            if name == "first":
                assert point.is_dir()  # the second pod's container still mounts there
        assert not point.exists()


async def test_graceful_termination_runs_prestop_then_sigterm(tmp_path: Path) -> None:
    """killContainer: the preStop hook, then SIGTERM; SIGKILL only after the grace period."""
    need("sh", "busybox")
    log = tmp_path / "order.log"
    async with process_env(tmp_path, extra={}) as env:
        script = f"trap 'echo term >> {log}; exit 0' TERM; while true; do sleep 0.1; done"
        body = shell_pod("stopper", script, lifecycle={"preStop": {"exec": {
            "command": ["sh", "-c", f"echo prestop >> {log}"]}}})
        body["spec"]["terminationGracePeriodSeconds"] = 20
        await env.run(body)
        await env.until("stopper", ready)
        await env.client.delete(Kind("v1", "Pod"), "stopper", namespace="default")
        await wait_for(lambda: log.exists() and log.read_text().count("\n") >= 2)
        assert log.read_text().split() == ["prestop", "term"]


async def test_image_without_catalog_entry_runs_simulated_and_says_so(
        tmp_path: Path) -> None:
    async with process_env(tmp_path) as env:
        body = pod("odd")
        body["spec"]["containers"] = [{"name": "app", "image": "example.com/unknown:1"}]
        await env.run(body)
        live = await env.until("odd", ready)
        cond = condition(live, FALLBACK_CONDITION)
        assert cond["status"] == "False" and cond["reason"] == "ImageNotInCatalog"
        assert "example.com/unknown:1" in cond["message"]


async def test_container_logs_are_written_in_the_cri_format(tmp_path: Path) -> None:
    need("sh", "busybox")
    async with process_env(tmp_path, FAST) as env:
        await env.run(shell_pod("talker", "echo out; echo err >&2; sleep 3600"))
        await env.until("talker", ready)
        [path] = runtime_of(env).log_paths("default", "talker", "app")
        await wait_for(lambda: path.read_text().count("\n") >= 2)
        lines = sorted(line.split(" ", 1)[1] for line in path.read_text().splitlines())
        assert lines == ["stderr F err", "stdout F out"]


async def test_resource_limits_not_enforced_are_reported_in_an_event(tmp_path: Path) -> None:
    """Without a delegated cgroup v2 hierarchy the limits are not enforced: a Warning
    event says so for the container instead of a silent no-op."""
    need("sh", "busybox")
    async with process_env(tmp_path) as env:
        body = shell_pod("limited", "sleep 3600")
        body["spec"]["containers"][0]["resources"] = {"limits": {"memory": "64Mi",
                                                                 "cpu": "100m"}}
        await env.run(body)
        await env.until("limited", ready)

        async def reported() -> bool:
            events = await env.client.list(Kind("v1", "Event"), namespace="default")
            return any(e.get("reason") == "ResourceLimitsNotEnforced"
                       and "cpu, memory" in str(e.get("message") or e.get("note"))
                       for e in events.items)

        await wait_for(reported, timeout=30)


def volume_body(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/unused"}, "storageClassName": "manual"}}


def claim_body(name: str, volume: str) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                     "volumeName": volume, "resources": {"requests": {"storage": "1Gi"}}}}


def last_failure(p: Obj) -> str:
    """The message the app container's last attempt ended with."""
    state = statuses(p).get("app", {}).get("lastState") or {}
    return str((state.get("terminated") or {}).get("message") or "")


async def test_a_container_that_cannot_be_created_yet_is_retried_under_restart_policy_always(
        tmp_path: Path) -> None:
    """A container whose volume is not there yet (its claim not made, then its claim's
    PersistentVolume not made, as when an operator makes a pod and its claim together) is
    retried until it can start: under ``restartPolicy: Always`` a pod is never terminal
    (pkg/kubelet/kubelet_pods.go ``getPhase``; pod_workers.go ends a pod only on a
    terminal phase). A claim naming a volume that does not exist mounts nothing
    (volumemanager/populator/desired_state_of_world_populator.go ``getPVSpec``): the
    runtime's reclaim of directories without a PV would have removed one made for it,
    under the container, and every later start failed."""
    need("sh", "busybox")
    options = KubeletOptions(backoff_base=0.5, backoff_cap=1.0)
    async with process_env(tmp_path, options) as env:
        body = shell_pod("early", "sleep 3600",
                         volumeMounts=[{"name": "data", "mountPath": "/data"}])
        body["spec"]["volumes"] = [{"name": "data",
                                    "persistentVolumeClaim": {"claimName": "late"}}]
        await env.run(body)
        await env.until("early", lambda p: int(statuses(p).get("app", {})
                                               .get("restartCount") or 0) >= 1)
        assert (await env.get("early"))["status"]["phase"] != "Failed"
        await env.client.create(claim_body("late", "pv-late"))
        await env.until("early", lambda p: 'persistentvolumes "pv-late" not found'
                        in last_failure(p))
        assert not (runtime_of(env).root / "volumes" / "pv-late").exists()
        await env.client.create(volume_body("pv-late"))
        started = await env.until("early", ready)
        assert started["status"]["phase"] == "Running"


async def test_a_volume_directory_removed_between_attempts_is_made_again(
        tmp_path: Path) -> None:
    """Each start sets the pod's volumes up again (the kubelet's volume manager,
    ``WaitForAttachAndMount`` before every start in kuberuntime's SyncPod): a claim's
    directory removed after an earlier attempt mounted it is made anew, not bound
    missing at every later start ("error mounting ...: no such file or directory")."""
    need("sh", "busybox")
    go = tmp_path / "go"
    options = KubeletOptions(backoff_base=0.5, backoff_cap=1.0)
    async with process_env(tmp_path, options) as env:
        await env.client.create(volume_body("pv-kept"))
        await env.client.create(claim_body("kept", "pv-kept"))
        body = shell_pod("again", f"[ -e {go} ] && exec sleep 3600; exit 1",
                         volumeMounts=[{"name": "data", "mountPath": "/data"}])
        body["spec"]["volumes"] = [{"name": "data",
                                    "persistentVolumeClaim": {"claimName": "kept"}}]
        await env.run(body)
        await env.until("again", lambda p: int(statuses(p).get("app", {})
                                               .get("restartCount") or 0) >= 1)
        directory = runtime_of(env).root / "volumes" / "pv-kept"
        assert directory.is_dir()
        shutil.rmtree(directory)
        await wait_for(directory.is_dir)  # by a later attempt: the running one exits 1
        go.touch()
        started = await env.until("again", ready)
        assert started["status"]["phase"] == "Running"
        # the running container mounts the directory made again, not the removed one
        assert await exec_in(env, "again", "touch", "/data/seen") == (0, "")
        assert (directory / "seen").exists()


async def test_container_logs_are_rotated_at_the_kubelets_size_and_file_count(
        tmp_path: Path) -> None:
    """A chatty container's log stays bounded: rotated at ``containerLogMaxSize`` into
    ``<log>.<timestamp>``, at most ``containerLogMaxFiles`` files, the oldest removed first,
    every rotated file gzip-compressed (``<log>.<timestamp>.gz``) but the newest;
    `kubectl logs` serves the current file and `kubectl logs -f` goes on across rotations,
    and stops being served once kubectl hangs up; `--previous` serves the previous
    instance's log (pkg/kubelet/logs/container_log_manager.go: rotateLog, removeExcessLogs,
    compressLog, rotateLatestLog; kuberuntime/logs/logs.go ReadLogs, whose follow ends with
    its request's context, and waitLogs)."""
    need("sh", "busybox")
    gate, again = tmp_path / "gate", tmp_path / "again"
    extra = {"kubelet.container-log-max-size": "2Ki", "kubelet.container-log-max-files": "3"}
    async with process_env(tmp_path, FAST, extra=extra) as env:
        await env.run(shell_pod("chatty", f"if [ -e {again} ]; then echo again; exec sleep "
                                          f"3600; fi; echo start; until [ -e {gate} ]; do "
                                          "sleep 0.1; done; i=0; while [ $i -lt 400 ]; do "
                                          "echo line-$i; i=$((i+1)); done; echo last; "
                                          f"until [ -e {again} ]; do sleep 0.1; done"))
        await env.until("chatty", ready)
        [current] = runtime_of(env).log_paths("default", "chatty", "app")
        kubectl = Kubectl(env, tmp_path, None)
        follower = await kubectl.start("logs", "-f", "chatty")
        try:
            assert follower.stdout is not None
            async with asyncio.timeout(30):
                assert await follower.stdout.readline() == b"start\n"
                gate.touch()
                followed = (await follower.stdout.readuntil(b"last\n")).decode().split()
        finally:
            if follower.returncode is None:
                follower.kill()
            await follower.wait()
        # the kubelet's follow ends with its reader (ReadLogs' request context): nothing of
        # this process keeps the log open once kubectl is gone
        await wait_for(lambda: not open_logs(current.parent))
        # lines written faster than a follower reads may be rotated away unread (as with
        # the kubelet); what it shows is in order, from the first file to the current one
        numbers = [int(line.removeprefix("line-")) for line in followed[:-1]]
        assert numbers[0] == 0 and numbers == sorted(set(numbers)), followed
        files = sorted(current.parent.iterdir())
        assert len(files) == 3, files
        assert all(f.name.startswith("0.log") and f.stat().st_size < 2048 + 64 for f in files)
        assert all(f.stat().st_mode & 0o777 == 0o600 for f in files)
        [compressed, newest] = sorted(set(files) - {current})
        assert compressed.name.endswith(".gz") and not newest.name.endswith(".gz"), files
        assert compressed.name.removesuffix(".gz") < newest.name
        for line in gzip.decompress(compressed.read_bytes()).decode().splitlines():
            assert line.split(" ")[1:3] == ["stdout", "F"] and "line-" in line, line
        out = await kubectl.ok("logs", "chatty")
        assert out.endswith("line-399\nlast\n") and "line-0\n" not in out
        assert await kubectl.ok("logs", "chatty", "--tail=1") == "last\n"
        again.touch()  # the container ends; its next instance only says so
        await env.until("chatty", lambda p: ready(p) and statuses(p)["app"]["restartCount"] == 1)
        previous = await kubectl.ok("logs", "chatty", "--previous")
        assert previous.endswith("line-399\nlast\n") and "line-0\n" not in previous
        await wait_for(lambda: current.with_name("1.log").read_bytes().endswith(b"again\n"))
        assert await kubectl.ok("logs", "chatty") == "again\n"


async def test_a_command_not_found_ends_the_container_start_error_as_containerd_says(
        tmp_path: Path) -> None:
    """A command the image lacks fails in runc's exec (Go's exec.LookPath), so containerd
    reports the container terminated with reason StartError, exit code 128 and runc's
    message, and the kubelet a Warning event Failed "Error: <message>"
    (kuberuntime_container.go startContainer; containerd's task creation), rather
    than a shell's 127 "not found". busybox's applets fill in only what busybox has."""
    need("sh", "busybox")
    async with process_env(tmp_path, FAST) as env:
        body = pod("missing", restartPolicy="Never")
        body["spec"]["containers"] = [
            {"name": "app", "image": "busybox:1.36", "command": ["no-such-program-here"]},
            {"name": "abs", "image": "busybox:1.36", "command": ["/no/such/program"]}]
        await env.run(body)
        done = await env.until("missing", lambda p: p["status"].get("phase") == "Failed")
        runc = ("failed to create containerd task: failed to create shim task: OCI runtime "
                "create failed: runc create failed: unable to start container process: ")
        app = statuses(done)["app"]["state"]["terminated"]
        assert (app["reason"], app["exitCode"], app["message"]) == (
            "StartError", 128, runc + 'exec: "no-such-program-here": executable file not '
            "found in $PATH: unknown")
        absolute = statuses(done)["abs"]["state"]["terminated"]
        assert (absolute["reason"], absolute["message"]) == (
            "StartError", runc + 'exec: "/no/such/program": stat /no/such/program: no such '
            "file or directory: unknown")

        async def failed_events() -> list[str] | None:
            events = await env.client.list(Kind("v1", "Event"), namespace="default")
            found = [str(e.get("message") or e.get("note")) for e in events.items
                     if e.get("reason") == "Failed" and e.get("type") == "Warning"]
            return found if len(found) >= 2 else None

        # startContainer records FailedToStartContainer ("Failed", "Error: %v")
        assert sorted(await wait_for(failed_events)) == sorted(
            ["Error: " + absolute["message"], "Error: " + app["message"]])
