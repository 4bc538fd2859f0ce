"""What the kubelet remembers of each pod it runs, between two syncs of that pod."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from setpoint.workloads.kubelet.runtime import ContainerState, ContainerStatus


@dataclass
class ContainerRecord:
    """One container of the pod spec, across its restarts."""

    name: str
    spec: dict[str, Any]
    init: bool = False
    ephemeral: bool = False
    """An ephemeral container (``spec.ephemeralContainers``): started once, never restarted."""
    container_id: str | None = None
    status: ContainerStatus | None = None
    restart_count: int = 0
    last_terminated: dict[str, Any] | None = None
    """The API ``terminated`` state of the previous instance (``lastState``)."""
    exit_published: bool = False
    """The current instance's exit has been written to the API (a restart may follow)."""
    restart_at: float | None = None
    """When the exited instance is due for a restart (CrashLoopBackOff until then)."""
    backoff: float = 0.0
    """The back-off the next natural crash will wait."""
    restart_now: bool = False
    """The current instance was killed by the restart fault: restart it without back-off."""
    waiting_message: str | None = None
    start_error: tuple[str, str] | None = None
    """(reason, message) why the last start failed before a container was created
    (``ErrImageNeverPull``): the container waits with them until a start succeeds."""

    applied: dict[str, Any] | None = None
    """The resources the runtime applied after an in-place resize (``spec``'s before)."""

    @property
    def field_path(self) -> str:
        """The container's ``fieldPath`` in the events about it (kubecontainer
        GenerateContainerRef, pkg/kubelet/container/ref.go)."""
        where = "ephemeralContainers" if self.ephemeral else \
            "initContainers" if self.init else "containers"
        return f"spec.{where}{{{self.name}}}"

    @property
    def sidecar(self) -> bool:
        """A restartable init container (``restartPolicy: Always``)."""
        return self.init and self.spec.get("restartPolicy") == "Always"

    @property
    def running(self) -> bool:
        return self.status is not None and self.status.state is ContainerState.RUNNING

    @property
    def exited(self) -> bool:
        return self.status is not None and self.status.state is ContainerState.EXITED

    @property
    def succeeded(self) -> bool:
        return self.exited and self.status is not None and self.status.exit_code == 0


@dataclass
class PodRecord:
    """A pod this kubelet has accepted: its sandbox, address and containers."""

    uid: str
    namespace: str
    name: str
    node: str
    start_time: float
    host_ip: str = ""
    ip: str = ""
    sandbox_id: str | None = None
    init: list[ContainerRecord] = field(default_factory=list)
    containers: list[ContainerRecord] = field(default_factory=list)
    ephemeral: list[ContainerRecord] = field(default_factory=list)
    paused: set[str] = field(default_factory=set)  # container ids the pause fault stopped
    terminating: bool = False
    """Its containers were asked to stop (the pod is being deleted)."""
    terminal: bool = False
    """Every container has stopped for good: the pod's phase is terminal."""
    failure: tuple[str, str] | None = None
    """Why the kubelet failed the pod (reason, message), if it did."""
    restart_handled: bool = False
    """A restart request was carried out; its annotation is still to be removed."""
    fallback: tuple[str, str] | None = None
    """(reason, message) when a process runtime runs this pod simulated."""
    volumes_ready: bool = False
    """Every volume is set up (volumemounts.py): the containers may start."""
    mount_attempts: int = 0
    resize: str | None = None
    """The state of an in-place resize (``status.resize``: InProgress, Deferred, Infeasible)."""

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    def all_containers(self) -> list[ContainerRecord]:
        return [*self.init, *self.containers, *self.ephemeral]

    def add_ephemeral(self, spec: Any) -> None:
        """Take on the ephemeral containers added to the pod since the last sync (they are
        only ever added: the API refuses their removal or change)."""
        known = {cr.name for cr in self.ephemeral}
        for c in spec or ():
            if isinstance(c, dict) and c.get("name") not in known:
                self.ephemeral.append(ContainerRecord(str(c.get("name")), c, ephemeral=True))

    def regular_done(self, policy: str) -> bool:
        """Every regular container has exited for good: nothing will restart it under the
        pod's ``restartPolicy``. Under ``Always`` that never happens, and under
        ``OnFailure`` only once each has succeeded, even before a restart is planned (a
        container that fails as it is created is exited before the next sync plans its
        restart): the kubelet's getPhase (pkg/kubelet/kubelet_pods.go) keeps such a pod
        Running, and only a terminal phase ends the pod (pod_workers.go)."""
        return bool(self.containers) and policy != "Always" and all(
            c.exited and c.restart_at is None and (policy == "Never" or c.succeeded)
            for c in self.containers)
