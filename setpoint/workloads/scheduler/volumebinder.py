"""The VolumeBinding plugin's PreBind (binder.go ``BindPodVolumes``): the API writes that
hand a pod's claims to the PV controller and the provisioner on the chosen node, then the
wait until every one of them is fully bound, as the scheduler's binding cycle waits before
it binds the pod.

The wait is on the scheduler's own informers (a claim or volume changed: look again), not a
poll; it ends with kube-scheduler's errors: the pod gone, a volume's ``claimRef`` reset, a
claim whose selected node the provisioner took away ("provisioning failed"), or the
``bindTimeout`` (600 s) passed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from setpoint.client import Client, Kind
from setpoint.machinery.objects import Obj
from setpoint.runtime._objects import clone
from setpoint.workloads.scheduler.volumebinding import PodVolumes
from setpoint.workloads.volumeclaims import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    claim_reference,
    fully_bound,
)

PVC = Kind("v1", "PersistentVolumeClaim")
PV = Kind("v1", "PersistentVolume")
BIND_TIMEOUT_S = 600.0  # kube-scheduler's VolumeBindingArgs.BindTimeoutSeconds default

Lookup = Callable[[Kind, str, str | None], Obj | None]


class VolumeBindingError(Exception):
    """The binding cycle failed: the message is the plugin's error."""


class VolumeChanges:
    """An informer handler waking whoever waits for a claim or a volume to change."""

    def __init__(self) -> None:
        self._waiters: set[asyncio.Future[None]] = set()

    def __repr__(self) -> str:
        return f"VolumeChanges(waiters={len(self._waiters)})"

    def on_add(self, obj: Obj) -> None:
        self._wake()

    def on_update(self, old: Obj, new: Obj) -> None:
        self._wake()

    def on_delete(self, obj: Obj) -> None:
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def next_change(self, timeout: float) -> None:
        """Return at the next change, or when ``timeout`` seconds pass."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            self._waiters.discard(waiter)


def _newer_or_same(cached: Obj | None, written: Obj) -> bool:
    """Whether the cache has caught up with our own write (``CompareResourceVersion``)."""
    if cached is None:
        return False
    try:
        return int(cached["metadata"]["resourceVersion"]) >= \
            int(written["metadata"]["resourceVersion"])
    except (KeyError, ValueError):
        return True


async def bind_pod_volumes(client: Client, lookup: Lookup, changes: VolumeChanges,
                           pod: Obj, node_name: str, volumes: PodVolumes,
                           timeout: float = BIND_TIMEOUT_S) -> None:
    """``BindPodVolumes``: ``bindAPIUpdate``, then ``checkBindings`` at each change until
    all is bound. VolumeBindingError with the plugin's message otherwise."""
    bindings: list[tuple[Obj, Obj]] = []
    for pv, claim in volumes.static_bindings:
        body = clone(pv)
        body["spec"]["claimRef"] = claim_reference(claim)
        body["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        bindings.append((await client.update(body), claim))
    provisions: list[Obj] = []
    for claim in volumes.dynamic_provisions:
        body = clone(claim)
        body["metadata"].setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
        provisions.append(await client.update(body))
    deadline = time.monotonic() + timeout
    while not _check_bindings(lookup, pod, node_name, bindings, provisions):
        left = deadline - time.monotonic()
        if left <= 0:
            raise VolumeBindingError("binding volumes: context deadline exceeded")
        await changes.next_change(left)


def _check_bindings(lookup: Lookup, pod: Obj, node_name: str,
                    bindings: list[tuple[Obj, Obj]], provisions: list[Obj]) -> bool:
    """``checkBindings``: True once every claim is fully bound; VolumeBindingError for what
    asks for the pod to be scheduled again."""
    meta: dict[str, Any] = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace")), str(meta.get("name"))
    if lookup(Kind("v1", "Pod"), name, namespace) is None:
        raise VolumeBindingError(
            f'binding volumes: pod does not exist any more: pod "{name}" not found')
    for written, claim in bindings:
        pv_name = str(written["metadata"]["name"])
        pv = lookup(PV, pv_name, None)
        if not _newer_or_same(pv, written):
            return False
        assert pv is not None
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if not ref.get("uid"):
            raise VolumeBindingError(f'binding volumes: ClaimRef got reset for pv "{pv_name}"')
        current = lookup(PVC, str(claim["metadata"]["name"]), namespace)
        if current is None or not fully_bound(current):
            return False
    for written in provisions:
        claim_name = str(written["metadata"]["name"])
        current = lookup(PVC, claim_name, namespace)
        if not _newer_or_same(current, written):
            return False
        assert current is not None
        annotations = (current.get("metadata") or {}).get("annotations")
        if not annotations:
            raise VolumeBindingError(
                f'binding volumes: selectedNode annotation reset for PVC "{claim_name}"')
        if annotations.get(ANN_SELECTED_NODE) != node_name:
            raise VolumeBindingError(
                f'binding volumes: provisioning failed for PVC "{claim_name}"')
        if not fully_bound(current):
            return False
    return True
