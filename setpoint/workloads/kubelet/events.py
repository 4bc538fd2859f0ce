"""Events from the simulated kubelets, one recorder per node as each kubelet has its own.

They are core/v1 events with ``source.component: kubelet`` and the node's name as
``source.host`` and ``reportingInstance`` (what ``kubectl describe`` shows as *From*, as the
real kubelet's ``tools/record`` recorder writes them), written in the
background by the SDK's recorder so that recording never delays a pod's sync.
"""

from __future__ import annotations

import asyncio
from typing import Any

from setpoint.client import Client
from setpoint.runtime import EventRecorder


class KubeletEvents:
    """Records events about pods on behalf of the kubelet of the pod's node."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._recorders: dict[str, EventRecorder] = {}
        self._starting: set[asyncio.Task[None]] = set()
        self._send_after: asyncio.Event | None = None

    def send_after(self, gate: asyncio.Event) -> None:
        """Have the recorders made from now on send once ``gate`` is set: events are still
        recorded (stamped) when they happen, their writes wait (``cluster up`` holds the
        kubelets' node events until its nodes are reported: setpoint/workloads/startorder.py).
        """
        self._send_after = gate

    def __repr__(self) -> str:
        return f"KubeletEvents(nodes={sorted(self._recorders)})"

    def _recorder(self, pod: dict[str, Any]) -> EventRecorder:
        return self._for_node(str((pod.get("spec") or {}).get("nodeName") or "unknown"))

    def about_node(self, node: dict[str, Any], reason: str) -> None:
        """``Node <name> status is now: <reason>`` about the kubelet's own node, as
        kubelet_node_status.go recordNodeStatusEvent writes it: about the kubelet's nodeRef,
        whose UID is the node's name (kubelet.go), which ``describe node`` also searches."""
        name = str(node["metadata"]["name"])
        ref = {**node, "metadata": {**node["metadata"], "uid": name}}
        self._for_node(name).normal(ref, reason, f"Node {name} status is now: {reason}")

    def at_registration(self, name: str) -> None:
        """What a kubelet records about its node when it starts and registers it:
        ``Starting`` (kubelet.go BirthCry), one event per pressure condition first set
        False (nodestatus/setters.go MemoryPressureCondition, DiskPressureCondition,
        PIDPressureCondition: a new condition's empty status differs from False), and
        ``NodeAllocatableEnforced`` (cm/node_container_manager_linux.go
        enforceNodeAllocatableCgroups); none for Ready, first appended."""
        ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": name}}
        recorder = self._for_node(name)
        recorder.normal(ref, "Starting", "Starting kubelet.")
        for reason in ("NodeHasSufficientMemory", "NodeHasNoDiskPressure",
                       "NodeHasSufficientPID"):
            recorder.normal(ref, reason, f"Node {name} status is now: {reason}")
        recorder.normal(ref, "NodeAllocatableEnforced",
                        "Updated Node Allocatable limit across pods")

    def _for_node(self, node: str) -> EventRecorder:
        recorder = self._recorders.get(node)
        if recorder is None:
            recorder = self._recorders[node] = EventRecorder(
                self._client, reporting_controller="kubelet", reporting_instance=node)
            task = asyncio.get_running_loop().create_task(self._start(recorder))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)
        return recorder

    async def _start(self, recorder: EventRecorder) -> None:
        if self._send_after is not None:
            await self._send_after.wait()
        await recorder.start()

    def normal(self, pod: dict[str, Any], reason: str, note: str) -> None:
        self._recorder(pod).normal(pod, reason, note)

    def warning(self, pod: dict[str, Any], reason: str, note: str) -> None:
        self._recorder(pod).warning(pod, reason, note)

    def about_container(self, pod: dict[str, Any], field_path: str, type_: str, reason: str,
                        note: str) -> None:
        """An event about one container (``involvedObject.fieldPath``), as the kubelet's
        recordContainerEvent and the image manager's logIt write them."""
        self._recorder(pod).event(pod, type_, reason, note, field_path=field_path)

    async def stop(self) -> None:
        """Write what is queued and stop every recorder."""
        if self._send_after is not None and not self._send_after.is_set():
            for task in self._starting:  # held: each recorder's stop writes its queue
                task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        await asyncio.gather(*(r.stop(timeout=2.0) for r in self._recorders.values()),
                             return_exceptions=True)
        self._recorders.clear()
