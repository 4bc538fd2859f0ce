"""The process runtime: containers of known images run as real local processes.

A pod's sandbox is its loopback address (``status.podIP``, allocated by the kubelet) and a
directory (``<root>/pods/<uid>``) holding its volumes, its containers' working directories
and logs (:mod:`.sandbox`). A container is a process started as :mod:`.spawn` describes,
with the argument vector the :mod:`.catalog` entry of its image makes, the environment the
kubelet builds (:mod:`.containerconfig`, :mod:`.environment`) and its volumes at their
``mountPath`` (:mod:`.volumemanager`, :mod:`.volumes`). Probes run for real
(:mod:`.prober`), commands in it through :mod:`.containerexec`; probe results are reported
through :attr:`ContainerStatus.ready`/``started``.

A pod with an image the catalog does not know, or whose program is not installed, runs in
the simulated runtime instead, whole: :meth:`ProcessRuntime.fallback_reason` says why, and
the kubelet reports it as an event and a pod condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from setpoint.workloads.kubelet.process import spawn, volumemanager
from setpoint.workloads.kubelet.process.catalog import ImageCatalog, ImageEntry
from setpoint.workloads.kubelet.process.containerconfig import generate_container_config
from setpoint.workloads.kubelet.process.containerexec import exec_in_container, exec_result
from setpoint.workloads.kubelet.process.dnsfiles import CLUSTER_DNS
from setpoint.workloads.kubelet.process.environment import EnvError, Fetch
from setpoint.workloads.kubelet.process.logs import LogRotatePolicy, LogWriter, copy_stream
from setpoint.workloads.kubelet.process.prober import Prober
from setpoint.workloads.kubelet.process.procusage import UsageMeter
from setpoint.workloads.kubelet.process.sandbox import (
    ProcessContainer,
    ProcessSandbox,
    write_dns_files,
)
from setpoint.workloads.kubelet.process.shim import STOP_CONTAINER
from setpoint.workloads.kubelet.process.terminal import Terminal
from setpoint.workloads.kubelet.process.volumes import VolumeError, VolumeSources
from setpoint.workloads.kubelet.runtime import (
    ContainerConfig,
    ContainerState,
    ContainerStatus,
    EventListener,
    ExitListener,
    SandboxConfig,
    SimulatedRuntime,
    image_ref,
)
from setpoint.workloads.kubelet.usage import Usage

log = logging.getLogger("setpoint.workloads.kubelet.process")

NOT_IN_CATALOG = "ImageNotInCatalog"
NOT_INSTALLED = "ProgramNotInstalled"
LIMITS_NOT_ENFORCED = "ResourceLimitsNotEnforced"


LOG_READ_LIMIT = 1 << 20  # bytes a container's output stream buffers before the log takes it
# how long a pod waits for its node's kubelet endpoint to be reported before it starts
NODE_SERVED_TIMEOUT = 10.0

class ProcessRuntime:
    """Runs containers of cataloged images as processes (see the module docstring)."""

    name = "containerd"
    runs_processes = True

    def __init__(self, root: Path | None = None, catalog: ImageCatalog | None = None,
                 clock: Callable[[], float] = time.time,
                 log_policy: LogRotatePolicy | None = None) -> None:
        self._own_root = root is None
        self.root = root or Path(tempfile.mkdtemp(prefix="setpoint-kubelet-"))
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.catalog = catalog or ImageCatalog()
        self.clock = clock
        self.log_policy = log_policy or LogRotatePolicy()
        self.simulated = SimulatedRuntime(clock)
        self.isolate = spawn.mount_namespaces_available()
        self.sources: VolumeSources | None = None
        self.api_host, self.api_port = "", ""
        self._sandboxes: dict[str, ProcessSandbox] = {}
        self._containers: dict[str, ProcessContainer] = {}
        self._fallbacks: dict[str, tuple[str, str]] = {}
        self._made_points: set[Path] = set()  # mount points made here that are still there
        self._listeners: list[ExitListener] = []
        self._event_listeners: list[EventListener] = []
        self._reaper: spawn.Reaper | None = None
        self._closed = False  # once closing, nothing new starts (it would outlive us)
        # nodes whose kubelet endpoint is up and reported on the Node: a pod runs only then,
        # so that once it is Ready `kubectl logs/exec` reach the endpoint the node names
        self._nodes_served: dict[str, asyncio.Event] = {}
        self._meter = UsageMeter()
        self.cluster_dns = CLUSTER_DNS
        """The nameserver of the pods' resolv.conf (the cluster's loopback network's)."""

    def __repr__(self) -> str:
        return (f"ProcessRuntime(root={self.root}, sandboxes={len(self._sandboxes)}, "
                f"containers={len(self._containers)})")

    # -- wiring ------------------------------------------------------------------------

    def bind(self, fetch: Fetch, request_token: Any, server: str) -> None:
        """Give the runtime its reads of the API (ConfigMaps, Secrets, tokens) and the API
        server's address (what ``KUBERNETES_SERVICE_HOST``/``PORT`` point at)."""
        self.sources = VolumeSources(fetch, request_token, self.root / "volumes")
        hostport = server.split("://", 1)[-1].rstrip("/")
        self.api_host, _, self.api_port = hostport.rpartition(":")

    def on_exit(self, listener: ExitListener) -> None:
        self._listeners.append(listener)
        self.simulated.on_exit(listener)

    def on_event(self, listener: EventListener) -> None:
        self._event_listeners.append(listener)

    def fallback_reason(self, sandbox_id: str) -> tuple[str, str] | None:
        return self._fallbacks.get(sandbox_id)

    def entry_for(self, image: str) -> tuple[ImageEntry | None, tuple[str, str] | None]:
        entry = self.catalog.lookup(image)
        if entry is None:
            return None, (NOT_IN_CATALOG, f"image {image} has no entry in the process "
                          "runtime's image catalog; its containers are simulated")
        if entry.executable() is None:
            return None, (NOT_INSTALLED, f"image {image} runs {entry.program}, which is not "
                          f"installed (install it with: {entry.install}); its containers "
                          "are simulated")
        return entry, None

    def _notify(self, sandbox: ProcessSandbox) -> None:
        for listener in self._listeners:
            listener(sandbox.config.pod_uid)

    def _event(self, sandbox: ProcessSandbox, type_: str, reason: str, message: str) -> None:
        for listener in self._event_listeners:
            listener(sandbox.config.pod_uid, type_, reason, message)

    # -- sandboxes ---------------------------------------------------------------------

    async def pull_image(self, image: str) -> str:
        return image_ref(image)

    def node_served(self, node: str) -> None:
        """The kubelet endpoint of ``node`` is listening and reported on its Node."""
        self._nodes_served.setdefault(node, asyncio.Event()).set()

    async def _wait_node_served(self, node: str) -> None:
        served = self._nodes_served.setdefault(node, asyncio.Event())
        try:
            await asyncio.wait_for(served.wait(), NODE_SERVED_TIMEOUT)
        except TimeoutError:
            log.warning("kubelet endpoint of node %s not reported after %.0f s; starting pods "
                        "anyway (logs and exec will not reach them)", node, NODE_SERVED_TIMEOUT)
            served.set()

    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        sandbox_id = hashlib.sha256(config.pod_uid.encode()).hexdigest()
        if sandbox_id in self._sandboxes or sandbox_id in self._fallbacks:
            return sandbox_id
        node = (config.pod.get("spec") or {}).get("nodeName")
        if node:
            await self._wait_node_served(str(node))
        spec = config.pod.get("spec") or {}
        for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
            _, why = self.entry_for(str(c.get("image", "")))
            if why is not None:
                self._fallbacks[sandbox_id] = why
                return await self.simulated.run_pod_sandbox(config)
        if self._closed:
            raise RuntimeError("the process runtime is stopping: no new pod starts")
        if self._reaper is None:
            self._reaper = spawn.Reaper()
        directory = self.root / "pods" / config.pod_uid
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        sandbox = ProcessSandbox(sandbox_id, config, directory)
        write_dns_files(sandbox, self.cluster_dns)
        self._sandboxes[sandbox_id] = sandbox
        return sandbox_id

    async def restore_pod_sandbox(self, config: SandboxConfig) -> str | None:
        # a restarted kubelet is a new process: the old one's containers died with it
        return None

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            await self.simulated.stop_pod_sandbox(sandbox_id)
            return
        for container_id in list(sandbox.containers):
            await self.kill_container(container_id)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        sandbox = self._sandboxes.pop(sandbox_id, None)
        if sandbox is None:
            self._fallbacks.pop(sandbox_id, None)
            await self.simulated.remove_pod_sandbox(sandbox_id)
            return
        for container_id in list(sandbox.containers):
            await self._wait_gone(container_id)
            await self.remove_container(container_id)
        self._made_points.update(sandbox.created_points)
        self._remove_unused_points()
        shutil.rmtree(sandbox.dir, ignore_errors=True)

    def _remove_unused_points(self) -> None:
        """Remove the mount points made on this machine that no container mounts any more.
        One another pod's container still mounts stays (empty) for it, and is looked at
        again at the next pod's removal: that pod found it there and did not make it."""
        for point in list(self._made_points):
            if spawn.mounted_anywhere(point):
                continue
            self._made_points.discard(point)
            with contextlib.suppress(OSError):
                if not point.is_dir():
                    point.unlink()
                    continue
                # ``point`` is the topmost directory made for a mount point: it and those
                # made under it, each only if empty (nothing a program wrote is removed)
                for directory, _, _ in os.walk(point, topdown=False):
                    with contextlib.suppress(OSError):
                        os.rmdir(directory)

    async def _wait_gone(self, container_id: str) -> None:
        container = self._containers.get(container_id)
        if container is None or container.proc is None:
            return
        await self.kill_container(container_id)
        with contextlib.suppress(ProcessLookupError):
            await container.proc.wait()

    # -- containers --------------------------------------------------------------------

    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            return await self.simulated.create_container(sandbox_id, config)
        container_id = f"{self.name}://{secrets.token_hex(32)}"
        directory = sandbox.dir / "containers" / config.name
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        instance = sandbox.instances.get(config.name, 0)
        sandbox.instances[config.name] = instance + 1
        log_dir = sandbox.dir / "logs" / config.name
        log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        for old in log_dir.glob("*.log*"):  # rotated files too (`<n>.log.<time>`)
            number = old.name.split(".", 1)[0]
            if number.isdigit() and int(number) < instance - 1:
                old.unlink()  # the kubelet keeps the current and the previous instance
        container = ProcessContainer(container_id, sandbox_id, config, self.clock(),
                                     directory, log_dir / f"{instance}.log")
        container.log_path.touch(mode=0o600)
        self._containers[container_id] = container
        sandbox.containers.add(container_id)
        try:
            await self._prepare(sandbox, container)
        except (EnvError, VolumeError, OSError) as exc:
            reason = "CreateContainerConfigError" if isinstance(exc, EnvError) else \
                "CreateContainerError"
            now = self.clock()
            container.started_at = container.finished_at = now
            container.exit_code, container.reason, container.message = 1, reason, str(exc)
        return container_id

    async def _prepare(self, sandbox: ProcessSandbox, container: ProcessContainer) -> None:
        """Environment, volumes and the argument vector of a container about to start."""
        assert self.sources is not None, "bind() the runtime before running pods"
        entry, why = self.entry_for(container.config.image)
        if entry is None:
            raise OSError(why[1] if why else "no catalog entry")
        await generate_container_config(sandbox, container, entry, self.sources,
                                        api_host=self.api_host, api_port=self.api_port,
                                        root=self.root, isolate=self.isolate)

    async def refresh_volumes(self) -> None:
        """Rewrite the API-backed volumes of every running pod whose sources changed (the
        kubelet's periodic sync of ConfigMap and Secret volumes)."""
        assert self.sources is not None
        await volumemanager.refresh_volumes(list(self._sandboxes.values()), self.sources)

    def update_pod(self, pod_uid: str, pod: Mapping[str, Any]) -> None:
        """The kubelet's latest view of the pod (labels, annotations for downward API)."""
        for sandbox in self._sandboxes.values():
            if sandbox.config.pod_uid == pod_uid:
                object.__setattr__(sandbox.config, "pod", pod)

    async def restore_container(self, sandbox_id: str, config: ContainerConfig,
                                container_id: str, started_at: float) -> bool:
        if sandbox_id not in self._sandboxes:
            return await self.simulated.restore_container(sandbox_id, config, container_id,
                                                          started_at)
        return False

    async def start_container(self, container_id: str) -> None:
        container = self._containers.get(container_id)
        if container is None:
            await self.simulated.start_container(container_id)
            return
        if container.started_at is not None:
            return
        sandbox = self._sandboxes[container.sandbox_id]
        container.started_at = self.clock()
        limits = (container.config.spec.get("resources") or {}).get("limits") or {}
        if limits:
            # no cgroup v2 hierarchy delegated to us: say so rather than pretend
            self._event(sandbox, "Warning", LIMITS_NOT_ENFORCED,
                        f"container {container.config.name}: resource limits "
                        f"({', '.join(sorted(limits))}) are not enforced by the process "
                        "runtime (no cgroup v2 delegation); no OOMKilled")
        spec = container.config.spec
        terminal = Terminal() if spec.get("tty") else None
        stdio: dict[str, Any] = (
            {"stdin": terminal.slave, "stdout": terminal.slave, "stderr": terminal.slave}
            if terminal is not None else
            {"stdin": asyncio.subprocess.PIPE if spec.get("stdin")
             else asyncio.subprocess.DEVNULL,
             "stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.PIPE})
        try:
            proc = await spawn.start_container_process(
                container.argv, **stdio, env=container.env, cwd=container.cwd,
                preexec_fn=spawn.preexec(container.binds, self.isolate,
                                         tty=terminal.slave if terminal else None,
                                         death_signal=STOP_CONTAINER),
                limit=LOG_READ_LIMIT)
        except (OSError, subprocess.SubprocessError) as exc:
            if terminal is not None:
                terminal.close()
            # a failed exec, or a failed mount-namespace setup in the child (preexec_fn):
            # the container ends StartError rather than stay a record that never ran
            container.finished_at = self.clock()
            container.exit_code, container.reason = 128, "StartError"
            container.message = spawn.start_error_message(container.argv[0], exc)
            # kuberuntime_container.go startContainer: FailedToStartContainer, "Error: %v"
            self._event(sandbox, "Warning", "Failed", f"Error: {container.message}")
            return
        if terminal is not None:
            terminal.release_slave()
        if self._closed:
            # the runtime began closing while this process was being created: it must not
            # outlive the runtime, and close() has already killed the ones it knew of
            spawn.stop_container_processes(proc.pid)
            await proc.wait()
            if terminal is not None:
                terminal.close()
            return
        container.proc = proc
        container.namespace = spawn.MountNamespace(proc.pid)
        container.running.set()
        if self._reaper is not None:
            self._reaper.register(proc.pid)
        loop = asyncio.get_running_loop()
        writer = container.log = LogWriter(container.log_path, self.log_policy)
        if terminal is not None:
            # one stream out of a terminal, logged as stdout
            output = await terminal.open_streams(LOG_READ_LIMIT)
            container.terminal = terminal
            container.stdin = terminal.input if spec.get("stdin") else None
            copies = [loop.create_task(copy_stream(output, writer, "stdout"))]
        else:
            assert proc.stdout is not None and proc.stderr is not None
            container.stdin = proc.stdin
            copies = [loop.create_task(copy_stream(proc.stdout, writer, "stdout")),
                      loop.create_task(copy_stream(proc.stderr, writer, "stderr"))]
        container.tasks = [*copies, loop.create_task(self._watch(sandbox, container,
                                                                 copies))]
        container.prober = Prober(
            container.config.name, container.config.spec, sandbox.config.ip,
            lambda cmd, timeout: self.exec_sync(container_id, cmd, timeout),
            lambda t, r, m: self._event(sandbox, t, r, m), lambda: self._notify(sandbox),
            lambda kind: self._probe_kill(container, kind))
        container.prober.start()

    async def _probe_kill(self, container: ProcessContainer, kind: str) -> None:
        spec = container.config.spec.get(f"{kind}Probe") or {}
        grace = spec.get("terminationGracePeriodSeconds")
        pod_spec = self._sandboxes[container.sandbox_id].config.pod.get("spec") or {}
        timeout = float(grace if grace is not None else
                        pod_spec.get("terminationGracePeriodSeconds", 30))
        await self.stop_container(container.id, timeout)

    async def _watch(self, sandbox: ProcessSandbox, container: ProcessContainer,
                     copies: list[asyncio.Task[None]]) -> None:
        assert container.proc is not None
        code = await container.proc.wait()
        if self._reaper is not None:
            self._reaper.unregister(container.proc.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(container.proc.pid, signal.SIGKILL)  # what it left behind
        await self._kill_escapees(container)
        await asyncio.gather(*copies, return_exceptions=True)
        if container.log is not None:
            container.log.close()
        if container.terminal is not None:
            container.terminal.close()
        if container.prober is not None:
            container.prober.stop()
        container.finished_at = self.clock()
        container.exit_code = 128 - code if code < 0 else code
        container.reason = "Completed" if code == 0 else "Error"
        container.running.clear()
        self._notify(sandbox)

    @staticmethod
    async def _kill_escapees(container: ProcessContainer) -> None:
        """Kill what left the container's process group (a daemon's ``setsid``) but not its
        mount namespace, as a PID namespace's end would; then let the namespace go."""
        namespace, container.namespace = container.namespace, None
        if namespace is not None:
            # off the event loop: a dying member may take a moment to go
            await asyncio.to_thread(namespace.kill_members)
            namespace.close()

    async def stop_container(self, container_id: str, timeout: float) -> None:
        container = self._containers.get(container_id)
        if container is None:
            await self.simulated.stop_container(container_id, timeout)
            return
        if container.proc is None or container.finished_at is not None \
                or container.stopping is not None:
            if container.proc is None and container.finished_at is None:
                container.started_at = container.started_at or self.clock()
                container.finished_at = self.clock()
                container.exit_code, container.reason = 137, "Error"
            return
        container.stopping = asyncio.get_running_loop().create_task(
            self._terminate(container, timeout))

    async def _terminate(self, container: ProcessContainer, timeout: float) -> None:
        """preStop, then SIGTERM, then SIGKILL when the grace period is over (the
        kubelet's killContainer: the hook's time counts against the grace period)."""
        assert container.proc is not None
        deadline = time.monotonic() + timeout
        hook = (container.config.spec.get("lifecycle") or {}).get("preStop")
        if hook:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, timeout)):
                    await self._run_hook(container, hook)
        self._signal(container, signal.SIGTERM)
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                await container.proc.wait()
        except TimeoutError:
            self._signal(container, signal.SIGKILL)

    async def _run_hook(self, container: ProcessContainer, hook: Mapping[str, Any]) -> None:
        if "exec" in hook:
            command = [str(c) for c in (hook["exec"] or {}).get("command") or ()]
            with contextlib.suppress(TimeoutError):
                await self.exec_sync(container.id, command, 3600.0)
        elif "sleep" in hook:
            await asyncio.sleep(float((hook["sleep"] or {}).get("seconds") or 0))
        elif "httpGet" in hook and container.prober is not None:
            await container.prober.check({"httpGet": hook["httpGet"], "timeoutSeconds": 3600})

    def _signal(self, container: ProcessContainer, sig: signal.Signals) -> None:
        if container.proc is None or container.proc.returncode is not None:
            return
        if sig == signal.SIGKILL:
            # not to the group: the shim must live to kill what left it (see .shim)
            spawn.stop_container_processes(container.proc.pid)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(container.proc.pid, sig)

    async def kill_container(self, container_id: str) -> None:
        container = self._containers.get(container_id)
        if container is None:
            await self.simulated.kill_container(container_id)
            return
        if container.proc is None and container.finished_at is None:
            container.started_at = container.started_at or self.clock()
            container.finished_at = self.clock()
            container.exit_code, container.reason = 137, "Error"
        self._signal(container, signal.SIGKILL)

    def pause_container(self, container_id: str, paused: bool) -> bool:
        """SIGSTOP (or SIGCONT) the container's processes: a hang, for fault tests."""
        container = self._containers.get(container_id)
        if container is None or container.proc is None:
            return False
        self._signal(container, signal.SIGSTOP if paused else signal.SIGCONT)
        return True

    async def container_status(self, container_id: str) -> ContainerStatus | None:
        container = self._containers.get(container_id)
        if container is None:
            return await self.simulated.container_status(container_id)
        config = container.config
        base = ContainerStatus(id=container.id, name=config.name, image=config.image,
                               image_ref=image_ref(config.image),
                               state=ContainerState.CREATED, created_at=container.created_at,
                               started_at=container.started_at)
        if container.finished_at is not None:
            return ContainerStatus(**{**base.__dict__, "state": ContainerState.EXITED,
                                      "finished_at": container.finished_at,
                                      "exit_code": container.exit_code,
                                      "reason": container.reason,
                                      "message": container.message,
                                      "ready": False, "started": False})
        if container.proc is not None:
            probes = container.prober.state if container.prober else None
            return ContainerStatus(**{**base.__dict__, "state": ContainerState.RUNNING,
                                      "ready": bool(probes and probes.ready),
                                      "started": bool(probes and probes.started)})
        return base

    async def remove_container(self, container_id: str) -> None:
        container = self._containers.pop(container_id, None)
        if container is None:
            await self.simulated.remove_container(container_id)
            return
        if container.prober is not None:
            container.prober.stop()
        self._signal(container, signal.SIGKILL)
        sandbox = self._sandboxes.get(container.sandbox_id)
        if sandbox is not None:
            sandbox.containers.discard(container_id)

    # -- exec, logs, usage ---------------------------------------------------------------

    def find(self, namespace: str, pod: str, container: str) -> list[ProcessContainer]:
        """The instances of a container, oldest first."""
        found = [c for c in self._containers.values()
                 if c.config.name == container
                 and (s := self._sandboxes.get(c.sandbox_id)) is not None
                 and s.config.namespace == namespace and s.config.name == pod]
        return sorted(found, key=lambda c: c.created_at)

    def log_paths(self, namespace: str, pod: str, container: str) -> list[Path]:
        """Log files of the container's instances, oldest first (current last)."""
        for sandbox in self._sandboxes.values():
            if sandbox.config.namespace == namespace and sandbox.config.name == pod:
                directory = sandbox.dir / "logs" / container
                return sorted(directory.glob("*.log"), key=lambda p: int(p.stem))
        return []

    def sandbox_of(self, namespace: str, pod: str) -> ProcessSandbox | None:
        """The process sandbox of a pod (its address is ``config.ip``)."""
        return next((s for s in self._sandboxes.values() if s.config.namespace == namespace
                     and s.config.name == pod), None)

    async def exec_process(self, container_id: str, command: list[str],
                           tty: int | None = None,
                           **kwargs: Any) -> asyncio.subprocess.Process:
        """Start ``command`` in the container's environment (its mounts, variables and
        working directory); the caller owns the process. ``tty``: a terminal's fd that
        becomes the command's controlling terminal."""
        container = self._containers.get(container_id)
        if container is None or container.proc is None or container.finished_at is not None:
            raise LookupError(f"container {container_id} is not running")
        return await exec_in_container(container, self.catalog, self.isolate, command,
                                       tty=tty, **kwargs)

    async def exec_sync(self, container_id: str, command: list[str],
                        timeout: float) -> tuple[int, bytes]:
        """Run ``command`` to completion: (exit code, combined output)."""
        try:
            proc = await self.exec_process(container_id, command,
                                           stdin=asyncio.subprocess.DEVNULL,
                                           stdout=asyncio.subprocess.PIPE,
                                           stderr=asyncio.subprocess.STDOUT)
        except (LookupError, OSError, subprocess.SubprocessError) as exc:
            # the container exited meanwhile, or the command cannot start (as runc: 126)
            return 126, str(exc).encode()
        return await exec_result(proc, timeout)

    def measured_usage(self, pod_uid: str) -> dict[str, Usage] | None:
        """Each running container's process group, measured (procusage.py); None for a
        pod this runtime simulates (an image it cannot run)."""
        sandbox_id = hashlib.sha256(pod_uid.encode()).hexdigest()
        if sandbox_id not in self._sandboxes:
            return None
        groups = self.pids(pod_uid)
        measured = self._meter.measure(groups.values())
        return {name: measured.get(group, Usage()) for name, group in groups.items()}

    def pids(self, pod_uid: str) -> dict[str, int]:
        """The running containers of a pod: name -> process (group) id."""
        return {c.config.name: c.proc.pid for c in self._containers.values()
                if c.proc is not None and c.finished_at is None
                and self._sandboxes.get(c.sandbox_id) is not None
                and self._sandboxes[c.sandbox_id].config.pod_uid == pod_uid}

    async def close(self) -> None:
        """Kill every process and remove what this runtime created."""
        self._closed = True
        for container in list(self._containers.values()):
            self._signal(container, signal.SIGKILL)
        for container in list(self._containers.values()):
            if container.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    await container.proc.wait()
            for task in container.tasks:
                task.cancel()
            await self._kill_escapees(container)
            if container.log is not None:
                container.log.close()
        for sandbox_id in list(self._sandboxes):
            await self.remove_pod_sandbox(sandbox_id)
        if self._reaper is not None:
            self._reaper.close()
            self._reaper = None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)
