"""The local APIServices: ``autoregister`` with ``crdregistration`` feeding it.

kube-apiserver registers an APIService for every built-in group-version it serves that has a
priority (pkg/controlplane/apiserver/aggregator.go ``apiServicesToRegister``, synced *on
start*), and one for every served version of every CRD, kept *continuously*
(pkg/controlplane/controller/crdregistration/crdregistration_controller.go). The sync rules are
autoregister's ``checkAPIService``
(staging/src/k8s.io/kube-aggregator/pkg/controllers/autoregister/autoregister_controller.go):
an ``onstart`` APIService is created, or its spec set back, once per server start, so one
deleted later stays deleted until the next start; a ``true`` one is recreated and set back
whenever it drifts, and deleted when no CRD serves its version any more; an APIService
without the label, or an ``onstart`` one that was not there at start, is left alone.

The ``autoregister-completion`` health check (pkg/controlplane/apiserver/aggregator.go
``makeAPIServiceAvailableHealthCheck``) fails until every built-in APIService registered on
start has been seen ``Available`` at least once, naming those still missing.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from setpoint.cluster.aggregator.apiservices import APISERVICES, is_available
from setpoint.cluster.aggregator.priorities import (
    AGGREGATOR_GROUP,
    AUTOMANAGED_LABEL,
    MANAGE_CONTINUOUSLY,
    MANAGE_ON_START,
    apiservice_name,
    default_priority,
    local_apiservice,
)
from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

CRDS = "apiextensions.k8s.io/customresourcedefinitions"


def _write() -> WriteOptions:
    return WriteOptions(field_manager="kube-apiserver", field_validation="Ignore")


def _sync_type(apiservice: Obj | None) -> str:
    if apiservice is None:
        return ""
    return str(((apiservice.get("metadata") or {}).get("labels") or {}).get(AUTOMANAGED_LABEL)
               or "")


class AutoRegister:
    """Keeps the APIServices this server answers for (``autoregister``)."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType,
                 registry: Registry) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._registry = registry
        self._desired: dict[str, Obj] = {}
        self._synced: set[str] = set()
        self._at_start: set[str] = set()
        self.started = False  # the kube-apiserver-autoregistration post-start hook ran
        # apiServicesToRegister's names, until each is seen Available (the health check's)
        self._pending = {a["metadata"]["name"] for a in self._builtin()}
        self.queue: WorkQueue[str] = WorkQueue("autoregister", self._sync)
        store.add_listener(self._on_event, (APISERVICES, CRDS))

    def __repr__(self) -> str:
        return f"AutoRegister(desired={len(self._desired)})"

    def start(self) -> None:
        """Register what is served now (the server's post-start hook); the writes follow
        on the queue."""
        self.started = True
        self._at_start = {a["metadata"]["name"] for a in self._store.list(APISERVICES)}
        for apiservice in self._store.list(APISERVICES):
            self._seen(apiservice)  # the informer's initial adds
        for apiservice in self._builtin():
            self._add(apiservice)
        # crdregistration's initial pass runs before autoregister starts, so an APIService
        # of a CRD that still exists is never deleted as spurious
        for crd in self._store.list(CRDS):
            for group, version in self._versions(crd):
                self._crd_version(group, version)
        for name in self._at_start:
            self.queue.add(name)

    def _builtin(self) -> list[Obj]:
        """``apiServicesToRegister``: an ``onstart`` APIService per served built-in
        group-version that has a priority."""
        served = {(rt.group, rt.version) for rt in self._registry.all() if not rt.is_custom}
        out = []
        for group, version in sorted(served):
            priority = default_priority(group, version, custom=False)
            if group == AGGREGATOR_GROUP or priority is None:
                continue  # makeAPIService: no priority, no APIService
            out.append(local_apiservice(group, version, priority, MANAGE_ON_START))
        return out

    def _seen(self, apiservice: Obj) -> None:
        if is_available(apiservice):
            self._pending.discard(apiservice["metadata"]["name"])

    def completion_error(self) -> str | None:
        """The ``autoregister-completion`` check's error, or None once it passes."""
        if self._pending:
            return f"missing APIService: [{' '.join(sorted(self._pending))}]"
        return None

    def _add(self, apiservice: Obj) -> None:
        name = apiservice["metadata"]["name"]
        self._desired[name] = apiservice
        self.queue.add(name)

    def _remove(self, name: str) -> None:
        self._desired.pop(name, None)
        self.queue.add(name)

    @staticmethod
    def _versions(crd: Obj) -> list[tuple[str, str]]:
        spec = crd.get("spec") or {}
        return [(str(spec.get("group") or ""), str(v.get("name") or ""))
                for v in spec.get("versions") or []]

    def _crd_version(self, group: str, version: str) -> None:
        """crdregistration's ``handleVersionUpdate``: an APIService while some CRD of the
        group serves the version."""
        name = apiservice_name(group, version)
        if group == AGGREGATOR_GROUP:
            self._remove(name)  # APIServiceAlreadyExists
            return
        for crd in self._store.list(CRDS):
            spec = crd.get("spec") or {}
            if spec.get("group") != group:
                continue
            for v in spec.get("versions") or []:
                if v.get("name") == version and v.get("served"):
                    priority = default_priority(group, version, custom=True)
                    assert priority is not None
                    self._add(local_apiservice(group, version, priority, MANAGE_CONTINUOUSLY))
                    return
        self._remove(name)

    def _on_event(self, event: Event) -> None:
        if event.resource == APISERVICES:
            if event.type != "DELETED" and self._pending:
                self._seen(event.obj)
            self.queue.add(event.name)
        elif event.resource == CRDS:
            versions = set(self._versions(event.obj))
            if event.prev is not None:
                versions.update(self._versions(event.prev))
            for group, version in sorted(versions):
                self._crd_version(group, version)

    def _sync(self, name: str) -> None:
        """``checkAPIService``: the table of its comment, row by row."""
        desired = self._desired.get(name)
        current = self._store.get(APISERVICES, "", name)
        synced = name in self._synced
        if _sync_type(desired) == MANAGE_ON_START and synced:
            return  # 2B, 5B, 6B: once per start
        try:
            self._reconcile(name, desired, current)
        except StatusError as err:
            if err.code not in (404, 409):
                raise
            self.queue.add(name)  # it moved on meanwhile: look again
            return
        self._synced.add(name)

    def _reconcile(self, name: str, desired: Obj | None, current: Obj | None) -> None:
        if current is None:
            if desired is not None:  # 2B, 2C
                self._rest.create(self._rt, None, Decoded(copy.deepcopy(desired)), _write())
            return
        kind = _sync_type(current)
        if kind not in (MANAGE_ON_START, MANAGE_CONTINUOUSLY):
            return  # 3: not ours
        if kind == MANAGE_ON_START and (name not in self._at_start or name in self._synced):
            return  # 4, and 5 "once"
        if desired is None:  # 5A, 6A: a spurious APIService we manage
            self._rest.delete(self._rt, None, name, DeleteOptions())
            return
        if current.get("spec") == desired["spec"]:
            return
        new = copy.deepcopy(current)
        new["spec"] = copy.deepcopy(desired["spec"])
        self._rest.update(self._rt, None, name, Decoded(new), _write())
