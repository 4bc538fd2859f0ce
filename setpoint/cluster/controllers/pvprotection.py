"""The ``pv-protection`` controller: a PersistentVolume being deleted goes once it is unbound.

A port of kube-controller-manager's pkg/controller/volume/pvprotection: the
StorageObjectInUseProtection admission plugin gives every PersistentVolume the
``kubernetes.io/pv-protection`` finalizer; this controller removes it from a volume being
deleted whose ``status.phase`` is not ``Bound`` (``isBeingUsed``), and adds it to a volume not
being deleted that lacks it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.controllers.protectionutil import (
    is_deletion_candidate,
    need_to_add_finalizer,
    with_finalizer,
    without_finalizer,
)
from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.controllers.resources import controller_write
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

PERSISTENT_VOLUMES = "/persistentvolumes"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"


class PVProtectionController:
    """Removes ``kubernetes.io/pv-protection`` from deleted volumes that are not Bound."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self.queue: WorkQueue[str] = WorkQueue("pv-protection", self._sync)
        store.add_listener(self._on_event, (PERSISTENT_VOLUMES,))

    def start(self) -> None:
        for pv in self._store.list(PERSISTENT_VOLUMES):
            self._enqueue(pv)

    def _on_event(self, event: Event) -> None:
        if event.type != "DELETED":
            self._enqueue(event.obj)

    def _enqueue(self, pv: Obj) -> None:
        # pvAddedUpdated
        if (need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER)
                or is_deletion_candidate(pv, PV_PROTECTION_FINALIZER)):
            self.queue.add(pv["metadata"]["name"])

    def _sync(self, name: str) -> None:
        pv = self._store.get(PERSISTENT_VOLUMES, "", name)
        if pv is None:
            return
        if is_deletion_candidate(pv, PV_PROTECTION_FINALIZER):
            if (pv.get("status") or {}).get("phase") == "Bound":
                return  # kept while bound: the PV controller releases it first
            self._write(without_finalizer(pv, PV_PROTECTION_FINALIZER))
            return
        if need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER):
            self._write(with_finalizer(pv, PV_PROTECTION_FINALIZER))

    def _write(self, pv: Obj) -> None:
        # a conflict (the volume moved on) is retried by the queue with the newer object
        self._rest.update(self._rt, None, pv["metadata"]["name"], Decoded(pv),
                          controller_write())
