"""Killing the cluster process (``kill -9``) leaves no container process behind: process
groups, PR_SET_PDEATHSIG and the reaper (setpoint/workloads/kubelet/process/spawn.py), and
each container's subreaper shim (setpoint/workloads/kubelet/process/shim.py), root or not."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from setpoint.client import Client, Kind, load_kubeconfig
from tests.waiting import wait_for
from tests.workloads.process.support import need

POD = Kind("v1", "Pod")


def processes_with(token: str) -> list[int]:
    """Processes whose environment carries ``token`` (children inherit it)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if token.encode() in environ:
            found.append(int(entry))
    return found


UNPRIVILEGED = 65534  # nobody


def _unprivileged(directory: Path) -> list[str]:
    """The command prefix that runs a program without root: as root, ``nobody`` (setpriv)
    keeping only CAP_DAC_READ_SEARCH, so that it reaches this interpreter and this test's
    directory (both under root's 0700 directories) yet is not root (``geteuid() != 0``: no
    mount namespaces, no port 53); ``directory`` becomes its own. Not root already: none."""
    if os.geteuid() != 0:
        return []
    setpriv = need("setpriv", "util-linux")
    os.chown(directory, UNPRIVILEGED, UNPRIVILEGED)
    return [setpriv, f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
            "env", f"HOME={directory}"]


def _cluster_process(kubeconfig: Path, prefix: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """``setpoint cluster up`` on the process runtime, one node, as its own process (for the
    tests to kill with SIGKILL)."""
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory",
         "--port", "0", "--kubeconfig", str(kubeconfig), "--runtime", "process", "--nodes", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def test_killing_the_cluster_process_leaves_no_container_process(
        tmp_path: Path) -> None:
    need("sh", "busybox")
    kubeconfig = tmp_path / "kubeconfig"
    token = f"SETPOINT_CLEANUP_{uuid.uuid4().hex}"
    cluster = _cluster_process(kubeconfig)
    try:
        await wait_for(kubeconfig.exists)
        async with Client(load_kubeconfig(kubeconfig)) as client:
            await client.create({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "sleeper", "namespace": "default"},
                "spec": {"containers": [{
                    "name": "app", "image": "busybox:1.36",
                    # a shell with children of its own: PDEATHSIG alone would miss them
                    "command": ["sh", "-c", "sleep 3600 & sleep 3600 & wait"],
                    "env": [{"name": token, "value": "1"}]}]}})

            async def running() -> bool:
                pod = await client.get(POD, "sleeper", namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running" and \
                    len(processes_with(token)) >= 3
            await wait_for(running, timeout=60)
        os.kill(cluster.pid, signal.SIGKILL)
        cluster.wait()
        await wait_for(lambda: not processes_with(token))
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
        for pid in processes_with(token):
            os.kill(pid, signal.SIGKILL)


async def test_a_child_that_leaves_its_process_group_dies_with_its_container_and_cluster(
        tmp_path: Path) -> None:
    """A container's child that daemonizes into its own session (``setsid``) leaves the
    container's process group, but not the container: the kubelet's runtime kills it when
    the container ends, as the container's PID namespace (or cgroup) would: the kernel
    kills every member of a PID namespace when its init ends (pid_namespaces(7)), and the
    kubelet's killContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go) stops the
    container as a whole. Checked for a deleted pod and for ``kill -9`` of the cluster."""
    need("setsid", "util-linux")
    kubeconfig = tmp_path / "kubeconfig"
    deleted, orphaned = (f"SETPOINT_ESCAPE_{uuid.uuid4().hex}" for _ in range(2))
    cluster = _cluster_process(kubeconfig)
    try:
        await wait_for(kubeconfig.exists)
        async with Client(load_kubeconfig(kubeconfig)) as client:
            for name, token in (("deleted", deleted), ("orphaned", orphaned)):
                await client.create({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                        "name": "app", "image": "busybox:1.36",
                        "command": ["sh", "-c", "setsid sleep 3600 & exec sleep 3600"],
                        "env": [{"name": token, "value": "1"}]}]}})

            async def running(name: str, token: str) -> bool:
                pod = await client.get(POD, name, namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running" and \
                    len(processes_with(token)) >= 2
            await wait_for(lambda: running("deleted", deleted), timeout=60)
            await wait_for(lambda: running("orphaned", orphaned), timeout=60)
            await client.delete(POD, "deleted", namespace="default")
            await wait_for(lambda: not processes_with(deleted))
        os.kill(cluster.pid, signal.SIGKILL)
        cluster.wait()
        await wait_for(lambda: not processes_with(orphaned))
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
        for pid in processes_with(deleted) + processes_with(orphaned):
            os.kill(pid, signal.SIGKILL)


async def test_without_root_a_daemonized_child_dies_with_its_pod_and_with_the_cluster(
        tmp_path: Path) -> None:
    """Without root there is no mount (or PID) namespace to hold a daemon: a container's
    child that daemonizes (double fork: its parent exits, so it is orphaned; ``setsid``:
    its own session and group) must still end with its container, as in a container's PID
    namespace (pid_namespaces(7)) under containerd's shim, a child subreaper
    (containerd runtime/v2/shim/shim_unix.go; prctl(2) PR_SET_CHILD_SUBREAPER): when its pod
    is deleted (the kubelet's killContainer, pkg/kubelet/kuberuntime/kuberuntime_container.go)
    and when the cluster process is killed with SIGKILL."""
    need("setsid", "util-linux")
    directory = tmp_path / "cluster"
    directory.mkdir(mode=0o700)
    prefix = _unprivileged(directory)
    kubeconfig = directory / "kubeconfig"
    deleted, orphaned = (f"SETPOINT_DAEMON_{uuid.uuid4().hex}" for _ in range(2))
    cluster = _cluster_process(kubeconfig, prefix)
    try:
        await wait_for(kubeconfig.exists, timeout=60)
        async with Client(load_kubeconfig(kubeconfig)) as client:
            for name, token in (("deleted", deleted), ("orphaned", orphaned)):
                await client.create({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                        "name": "app", "image": "busybox:1.36",
                        # the subshell forks the daemon and exits: a double fork
                        "command": ["sh", "-c", "(setsid sleep 3600 &); exec sleep 3600"],
                        "env": [{"name": token, "value": "1"}]}]}})

            async def daemonized(name: str, token: str) -> bool:
                pod = await client.get(POD, name, namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running" and any(
                    _session_leader(pid) for pid in processes_with(token))
            await wait_for(lambda: daemonized("deleted", deleted), timeout=60)
            await wait_for(lambda: daemonized("orphaned", orphaned), timeout=60)
            await client.delete(POD, "deleted", namespace="default")
            await wait_for(lambda: not processes_with(deleted))
        os.kill(cluster.pid, signal.SIGKILL)
        cluster.wait()
        await wait_for(lambda: not processes_with(orphaned))
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
        for pid in processes_with(deleted) + processes_with(orphaned):
            os.kill(pid, signal.SIGKILL)


def _daemon_with(token: str) -> bool:
    """Whether a daemon (a ``sleep`` leading its session) carries ``token``."""
    return any(_session_leader(pid) for pid in processes_with(token))


def _session_leader(pid: int) -> bool:
    """Whether ``pid`` is a ``sleep`` that leads its own session (proc(5): field 6)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    comm = raw[raw.find(b"(") + 1:raw.rfind(b")")]
    return comm == b"sleep" and int(raw[raw.rfind(b")") + 2:].split()[3]) == pid


async def test_without_root_a_daemon_started_by_exec_dies_with_its_pod_and_with_the_cluster(
        tmp_path: Path) -> None:
    """A process started by ``kubectl exec`` joins its container (runc exec: the container's
    cgroup and PID namespace, libcontainer/process_linux.go setnsProcess), so it dies with
    the container even when it daemonizes (``setsid``, its parent gone): when its pod is
    deleted and when the cluster process is killed with SIGKILL. Without root each exec runs
    under a shim of its own that ends with the container's
    (setpoint/workloads/kubelet/process/shim.py)."""
    need("setsid", "util-linux")
    kubectl = need("kubectl", "kubectl")
    directory = tmp_path / "cluster"
    directory.mkdir(mode=0o700)
    prefix = _unprivileged(directory)
    kubeconfig = directory / "kubeconfig"
    deleted, orphaned = (f"SETPOINT_EXEC_DAEMON_{uuid.uuid4().hex}" for _ in range(2))
    execs: list[subprocess.Popen[bytes]] = []
    cluster = _cluster_process(kubeconfig, prefix)
    try:
        await wait_for(kubeconfig.exists, timeout=60)
        async with Client(load_kubeconfig(kubeconfig)) as client:
            for name in ("deleted", "orphaned"):
                await client.create({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                        "name": "app", "image": "busybox:1.36",
                        "command": ["sleep", "3600"]}]}})

            async def running(name: str) -> bool:
                pod = await client.get(POD, name, namespace="default")
                return (pod.get("status") or {}).get("phase") == "Running"
            for name, token in (("deleted", deleted), ("orphaned", orphaned)):
                await wait_for(functools.partial(running, name), timeout=60)
                # the daemon lets go of the exec's streams, so the exec may end at once
                execs.append(subprocess.Popen(
                    [kubectl, "--kubeconfig", str(kubeconfig), "--cache-dir",
                     str(tmp_path / "cache"), "exec", name, "--", "sh", "-c",
                     f"{token}=1 setsid sleep 3600 </dev/null >/dev/null 2>&1 &"],
                    stdout=subprocess.DEVNULL))
                await wait_for(functools.partial(_daemon_with, token), timeout=60)
            await client.delete(POD, "deleted", namespace="default")
            await wait_for(lambda: not processes_with(deleted))
            # each exec ended as its command did (exit 0), not held by its daemon
            assert [exec_.wait(timeout=60) for exec_ in execs] == [0, 0]
        os.kill(cluster.pid, signal.SIGKILL)
        cluster.wait()
        await wait_for(lambda: not processes_with(orphaned))
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
        for pid in processes_with(deleted) + processes_with(orphaned):
            os.kill(pid, signal.SIGKILL)
        for exec_ in execs:
            if exec_.poll() is None:
                exec_.kill()
                exec_.wait()
