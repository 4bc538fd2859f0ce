"""The container runtime behind the kubelet: a small interface and the simulated runtime.

The interface follows the CRI's shape (sandboxes that hold a pod's network address, and
containers created, started and stopped inside them), reduced to what the kubelet here
needs. Every call returns promptly: stopping a container only asks it to stop; the exit is
reported later through :meth:`ContainerRuntime.on_exit` and :meth:`container_status`, as the
kubelet's PLEG learns of it. A runtime that runs real processes for known images (each pod on
its own loopback address, :mod:`setpoint.workloads.kubelet.process`) implements the same
:class:`ContainerRuntime`; the simulated one stays the default.

The simulated runtime keeps containers in memory and computes their state from the clock:
a container told (by :class:`Behaviour`) to run for two seconds *is* exited once two seconds
have passed, whoever asks.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import hashlib
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from setpoint.workloads.kubelet.usage import Usage

ExitListener = Callable[[str], None]
"""Called with a pod's uid when one of its containers exited on its own (or, for a runtime
that probes, when a probe result changed): the pod is due a sync."""
EventListener = Callable[[str, str, str, str], None]
"""Called with (pod uid, event type, reason, message) for what the runtime saw (probes)."""

SIGKILL_EXIT_CODE = 137


class ContainerState(enum.StrEnum):
    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class SandboxConfig:
    """A pod's sandbox: its identity and the address the kubelet allocated for it."""

    pod_uid: str
    namespace: str
    name: str
    node: str
    ip: str
    host_network: bool = False
    pod: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """The pod as the kubelet saw it (volumes, service account, fields for the downward
    API); a runtime that runs nothing ignores it."""


@dataclass(frozen=True)
class Behaviour:
    """What a simulated container does (runtimes that run real programs ignore it)."""

    run_for: float | None = None
    """Exit by itself this many seconds after starting (None: run until stopped)."""
    exit_code: int = 0
    """The exit code of that exit."""
    stop_after: float | None = None
    """Seconds to exit after SIGTERM, with code 0, unless the stop timeout comes first:
    then it is killed (137). None: it drains until the timeout and then exits 0 (so a
    deleted pod lives for its grace period)."""


@dataclass(frozen=True)
class ContainerConfig:
    """A container to create in a sandbox: the parts of the pod spec a runtime needs."""

    name: str
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    ports: tuple[int, ...] = ()
    behaviour: Behaviour = Behaviour()
    spec: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """The container as the pod spec has it (env, mounts, probes, hooks)."""


@dataclass(frozen=True)
class ContainerStatus:
    """A container as the runtime sees it (times are Unix timestamps)."""

    id: str
    name: str
    image: str
    image_ref: str
    state: ContainerState
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    started: bool | None = None
    """The startup probe's verdict, for a runtime that probes; None: the kubelet derives
    it from the probe delays (the simulation)."""
    ready: bool | None = None
    """The readiness probe's verdict, likewise."""


class ContainerRuntime(Protocol):
    """What the kubelet asks of a container runtime (a reduced CRI)."""

    name: str
    runs_processes: bool
    """Containers are real programs: grace periods are honoured rather than capped, and
    probes are the runtime's (``ContainerStatus.started``/``ready``)."""

    def on_exit(self, listener: ExitListener) -> None:
        """Call ``listener(pod_uid)`` whenever a container exits without being asked to
        stop by the kubelet at that instant (crashes, completions, delayed stops)."""

    def on_event(self, listener: EventListener) -> None:
        """Call ``listener`` with the events the runtime sees (probe failures)."""

    def fallback_reason(self, sandbox_id: str) -> tuple[str, str] | None:
        """(reason, message) when the sandbox's pod runs simulated in a runtime that runs
        programs (an image it cannot run); None otherwise."""

    async def pull_image(self, image: str) -> str:
        """Make ``image`` present; returns its digested reference (the ``imageID``)."""

    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        """Create and start the pod's sandbox (its network namespace); returns its id."""

    async def restore_pod_sandbox(self, config: SandboxConfig) -> str | None:
        """The id of a sandbox for this pod that survived a kubelet restart, or None."""

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        """Stop the sandbox; its containers are killed."""

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        """Forget the sandbox and its containers."""

    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        """Create a container (not started); returns ``<runtime>://<id>``."""

    async def restore_container(self, sandbox_id: str, config: ContainerConfig,
                                container_id: str, started_at: float) -> bool:
        """Take back a container a kubelet restart left running; False when it is gone."""

    async def start_container(self, container_id: str) -> None:
        """Start a created container."""

    async def stop_container(self, container_id: str, timeout: float) -> None:
        """Send SIGTERM, and SIGKILL after ``timeout`` seconds; returns at once."""

    async def kill_container(self, container_id: str) -> None:
        """SIGKILL now (the container exits 137)."""

    async def container_status(self, container_id: str) -> ContainerStatus | None:
        """The container's current status, or None when the runtime does not know it."""

    async def remove_container(self, container_id: str) -> None:
        """Forget an exited container."""

    def update_pod(self, pod_uid: str, pod: Mapping[str, Any]) -> None:
        """The kubelet's latest view of the pod, its generated status included (what its
        status manager holds, which the node's endpoints answer from)."""

    def measured_usage(self, pod_uid: str) -> dict[str, Usage] | None:
        """What the pod's running containers use, by name, measured from what runs; None
        when the pod's usage is simulated (:mod:`setpoint.workloads.kubelet.usage`)."""


@functools.lru_cache(maxsize=1024)
def normalize_image(image: str) -> str:
    """The fully qualified reference containerd reports for ``image``
    (``nginx`` -> ``docker.io/library/nginx:latest``); remembered, as every status of every
    container asks it again of the few images a cluster runs."""
    name, _, digest = image.partition("@")
    first, slash, _rest = name.partition("/")
    if not slash:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    last = name.rsplit("/", 1)[-1]
    if not digest and ":" not in last:
        name += ":latest"
    return f"{name}@{digest}" if digest else name


@functools.lru_cache(maxsize=1024)
def image_ref(image: str) -> str:
    """A stable digested reference for ``image`` (``repo@sha256:...``), remembered (a hash
    per container status otherwise)."""
    full = normalize_image(image)
    if "@" in full:
        return full
    repository = full.rsplit(":", 1)[0]
    digest = hashlib.sha256(full.encode()).hexdigest()
    return f"{repository}@sha256:{digest}"


@dataclass
class _Container:
    id: str
    sandbox_id: str
    config: ContainerConfig
    created_at: float
    started_at: float | None = None
    stop_requested_at: float | None = None
    stop_timeout: float = 0.0
    forced: tuple[float, int, str] | None = None  # (when, exit code, reason)
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    def exit_at(self) -> tuple[float, int, str] | None:
        """When, with which code and reason, this container exits (or has exited)."""
        candidates: list[tuple[float, int, str]] = []
        if self.forced is not None:
            candidates.append(self.forced)
        if self.started_at is None:
            return min(candidates) if candidates else None
        behaviour = self.config.behaviour
        if behaviour.run_for is not None:
            code = behaviour.exit_code
            candidates.append((self.started_at + behaviour.run_for, code,
                               "Completed" if code == 0 else "Error"))
        if self.stop_requested_at is not None:
            after = behaviour.stop_after
            if after is None:
                # drains until told to go: a clean exit as the grace period ends
                candidates.append((self.stop_requested_at + self.stop_timeout, 0, "Completed"))
            elif after < self.stop_timeout:
                candidates.append((self.stop_requested_at + after, 0, "Completed"))
            else:
                candidates.append((self.stop_requested_at + self.stop_timeout,
                                   SIGKILL_EXIT_CODE, "Error"))
        return min(candidates, key=lambda c: c[0]) if candidates else None


@dataclass
class _Sandbox:
    id: str
    config: SandboxConfig
    containers: set[str] = field(default_factory=set)


class SimulatedRuntime:
    """A container runtime with no processes: containers live in memory, and their state
    follows from their :class:`Behaviour` and the clock."""

    name = "containerd"
    runs_processes = False

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._sandboxes: dict[str, _Sandbox] = {}
        self._containers: dict[str, _Container] = {}
        self._listeners: list[ExitListener] = []

    def __repr__(self) -> str:
        return (f"SimulatedRuntime(sandboxes={len(self._sandboxes)}, "
                f"containers={len(self._containers)})")

    def on_exit(self, listener: ExitListener) -> None:
        self._listeners.append(listener)

    def on_event(self, listener: EventListener) -> None:
        """The simulation sees nothing of its own to report."""

    def fallback_reason(self, sandbox_id: str) -> tuple[str, str] | None:
        return None

    def update_pod(self, pod_uid: str, pod: Mapping[str, Any]) -> None:
        return None  # nothing here answers from the pod

    def measured_usage(self, pod_uid: str) -> dict[str, Usage] | None:
        return None  # nothing runs: usage.py simulates it

    async def pull_image(self, image: str) -> str:
        return image_ref(image)

    @staticmethod
    def _sandbox_id(pod_uid: str) -> str:
        # derived from the pod, so that a restarted kubelet finds "the same" sandbox
        return hashlib.sha256(pod_uid.encode()).hexdigest()

    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        sandbox_id = self._sandbox_id(config.pod_uid)
        self._sandboxes.setdefault(sandbox_id, _Sandbox(sandbox_id, config))
        return sandbox_id

    async def restore_pod_sandbox(self, config: SandboxConfig) -> str | None:
        # nothing runs, so nothing can have died: every sandbox survives
        return await self.run_pod_sandbox(config)

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            return
        for container_id in sandbox.containers:
            container = self._containers.get(container_id)
            if container is not None and not self._exited(container):
                self._force(container, SIGKILL_EXIT_CODE, "Error", notify=False)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        sandbox = self._sandboxes.pop(sandbox_id, None)
        if sandbox is None:
            return
        for container_id in sandbox.containers:
            container = self._containers.pop(container_id, None)
            if container is not None and container.timer is not None:
                container.timer.cancel()

    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            raise LookupError(f"no sandbox {sandbox_id}")
        # 64 hex digits as containerd's IDs; unique is all they need to be here (a
        # getrandom(2) per ID was 0.2 % of the workloads' process)
        container_id = f"{self.name}://{random.getrandbits(256):064x}"
        self._containers[container_id] = _Container(container_id, sandbox_id, config,
                                                    self._clock())
        sandbox.containers.add(container_id)
        return container_id

    async def restore_container(self, sandbox_id: str, config: ContainerConfig,
                                container_id: str, started_at: float) -> bool:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            return False
        container = _Container(container_id, sandbox_id, config, started_at, started_at)
        self._containers[container_id] = container
        sandbox.containers.add(container_id)
        self._schedule(container)
        return True

    async def start_container(self, container_id: str) -> None:
        container = self._get(container_id)
        if container.started_at is None:
            container.started_at = self._clock()
            self._schedule(container)

    async def stop_container(self, container_id: str, timeout: float) -> None:
        container = self._get(container_id)
        if self._exited(container):
            return
        if container.started_at is None:
            self._force(container, SIGKILL_EXIT_CODE, "Error", notify=False)
            return
        if container.stop_requested_at is None:
            container.stop_requested_at = self._clock()
            container.stop_timeout = max(0.0, timeout)
            self._schedule(container)

    async def kill_container(self, container_id: str) -> None:
        container = self._get(container_id)
        if not self._exited(container):
            self._force(container, SIGKILL_EXIT_CODE, "Error", notify=False)

    async def container_status(self, container_id: str) -> ContainerStatus | None:
        container = self._containers.get(container_id)
        if container is None:
            return None
        config = container.config
        exit_at = container.exit_at()
        if exit_at is not None and exit_at[0] <= self._clock():
            when, code, reason = exit_at
            return ContainerStatus(id=container.id, name=config.name, image=config.image,
                                   image_ref=image_ref(config.image),
                                   state=ContainerState.EXITED,
                                   created_at=container.created_at,
                                   started_at=container.started_at or when,
                                   finished_at=when, exit_code=code, reason=reason)
        return ContainerStatus(id=container.id, name=config.name, image=config.image,
                               image_ref=image_ref(config.image),
                               state=ContainerState.CREATED if container.started_at is None
                               else ContainerState.RUNNING,
                               created_at=container.created_at,
                               started_at=container.started_at)

    async def remove_container(self, container_id: str) -> None:
        container = self._containers.pop(container_id, None)
        if container is None:
            return
        if container.timer is not None:
            container.timer.cancel()
        sandbox = self._sandboxes.get(container.sandbox_id)
        if sandbox is not None:
            sandbox.containers.discard(container_id)

    # -- internals ---------------------------------------------------------------------

    def _get(self, container_id: str) -> _Container:
        container = self._containers.get(container_id)
        if container is None:
            raise LookupError(f"no container {container_id}")
        return container

    def _exited(self, container: _Container) -> bool:
        exit_at = container.exit_at()
        return exit_at is not None and exit_at[0] <= self._clock()

    def _force(self, container: _Container, code: int, reason: str, *, notify: bool) -> None:
        container.forced = (self._clock(), code, reason)
        if container.timer is not None:
            container.timer.cancel()
            container.timer = None
        if notify:
            self._notify(container)

    def _schedule(self, container: _Container) -> None:
        """Tell the listeners when the container's own exit comes."""
        if container.timer is not None:
            container.timer.cancel()
            container.timer = None
        exit_at = container.exit_at()
        if exit_at is None:
            return
        delay = max(0.001, exit_at[0] - self._clock())
        loop = asyncio.get_running_loop()
        container.timer = loop.call_later(delay, self._notify, container)

    def _notify(self, container: _Container) -> None:
        container.timer = None
        if self._containers.get(container.id) is not container:
            return
        if not self._exited(container):
            # the loop's clock ran ahead of the wall clock: look again a little later
            self._schedule(container)
            return
        sandbox = self._sandboxes.get(container.sandbox_id)
        if sandbox is None:
            return
        for listener in self._listeners:
            listener(sandbox.config.pod_uid)
