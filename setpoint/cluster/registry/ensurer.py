"""The server's own objects, created at start as kube-apiserver's post-start hooks ensure
them (the system namespaces, rbac/bootstrap-roles' ``EnsureRBACPolicy``, the system
priority classes, the API Priority and Fairness configuration of pkg/registry/flowcontrol
ensurer): an object is created unless it exists, so a restart keeps what a user changed.

While a start is under way (``begin`` … ``end``) each create is taken from the recording of
what the full write path stored (``bootstrap/recorded.py``) when the recording knows it;
``recorder``, when set, is given what the full path stored instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from setpoint.cluster.bootstrap.recorded import Recorded, blanked, blanked_update, digest
from setpoint.cluster.registry.genericstore import new_uid
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.storage import Store

MANAGER = "kube-apiserver"


class Ensurer:
    """Creates the bootstrap objects through ``rest`` (or from the recording) into ``store``."""

    def __init__(self, store: Store, registry: Registry, rest: REST) -> None:
        self._store = store
        self._registry = registry
        self._rest = rest
        self._recorded: Recorded | None = None
        self.recorder: dict[str, Any] | None = None
        self.missed = 0  # bootstrap writes the recording did not know
        self.updates_replayed = 0  # the APF status writes taken from it

    def __repr__(self) -> str:
        return f"Ensurer(missed={self.missed}, updates_replayed={self.updates_replayed})"

    def begin(self, admission_stored: bool) -> None:
        """A start's bootstrap writes follow, from the recording unless a recorder is set or
        admission the recording did not see is stored (a restart's webhooks or policies
        would be asked about a bootstrap object a user deleted: it takes the full path)."""
        self._recorded = Recorded({}, []) if self.recorder is not None or admission_stored \
            else Recorded.load()

    def end(self) -> None:
        if self._recorded is not None:
            self.missed, self._recorded = self._recorded.missed, None

    def ensure(self, group: str, version: str, resource: str, ns: str | None, obj: Obj,
               manager: str = MANAGER) -> Obj:
        """Create ``obj`` unless it exists; return the stored object."""
        rt = self._registry.require(group, version, resource)
        name = obj["metadata"]["name"]
        existing = self._store.get(rt.storage_key, ns or "", name)
        recorded = self._recorded
        if existing is not None:
            if recorded is not None:
                recorded.existing += 1
            return existing
        if recorded is None:
            opts = WriteOptions(field_manager=manager, field_validation="Ignore")
            return self._rest.create(rt, ns, Decoded(obj), opts).obj
        # a bootstrap object: as the full path stored it (bootstrap/recorded.py)
        key = digest(group, version, resource, ns, manager, obj)
        made = recorded.take(key, new_uid(), self._rest.clock())
        if made is not None:
            return self._store.put(rt.storage_key, made)
        opts = WriteOptions(field_manager=manager, field_validation="Ignore")
        created = self._rest.create(rt, ns, Decoded(obj), opts).obj
        if self.recorder is not None:
            raw = self._store.get_raw(rt.storage_key, ns or "", name)
            assert raw is not None
            self.recorder["creates"][key] = blanked(orjson.loads(raw))
        return created

    def replace(self, group: str, version: str, resource: str, ns: str, obj: Obj) -> None:
        """Create ``obj`` or bring the stored one up to date (a restart may change the port)."""
        rt = self._registry.require(group, version, resource)
        live = self._store.get(rt.storage_key, ns, obj["metadata"]["name"])
        if live is None:
            self.ensure(group, version, resource, ns, obj)
            return
        opts = WriteOptions(field_manager=MANAGER, field_validation="Ignore")
        body = {**obj, "metadata": {**obj["metadata"],
                                    "resourceVersion": live["metadata"]["resourceVersion"]}}
        self._rest.update(rt, ns, obj["metadata"]["name"], Decoded(body), opts)

    def delete_unless(self, group: str, version: str, resource: str, ns: str, name: str,
                      keep: Callable[[Obj], bool]) -> None:
        """Delete the stored object unless ``keep`` says it may stay."""
        rt = self._registry.require(group, version, resource)
        live = self._store.get(rt.storage_key, ns, name)
        if live is not None and not keep(live):
            self._rest.delete(rt, ns, name, DeleteOptions())

    def flowcontrol(self, sync_status: Callable[[], None]) -> None:
        """The APF configuration (``bootstrap/flowcontrol.py``), created once: a restart
        keeps what is stored, as the apiserver's ensurer keeps objects a user changed; then
        each FlowSchema's ``Dangling`` condition, as the APF config controller writes it
        (``sync_status``: ``controllers/flowschemastatus.py``)."""
        from setpoint.cluster.bootstrap import flowcontrol

        fc = flowcontrol.GROUP
        for level in flowcontrol.priority_level_configurations():
            self.ensure(fc, "v1", "prioritylevelconfigurations", None, level,
                        flowcontrol.PRODUCER_FIELD_MANAGER)
        for schema in flowcontrol.flow_schemas():
            self.ensure(fc, "v1", "flowschemas", None, schema,
                        flowcontrol.PRODUCER_FIELD_MANAGER)
        updates = self._recorded.updates() if self._recorded is not None else None
        if updates is not None:  # what sync_status would write onto the recorded objects
            now = self._rest.clock()
            for resource, update in updates:
                live = self._store.get(resource, "", update["metadata"]["name"])
                assert live is not None  # (stored above, from the same recording)
                self._store.put(resource, Recorded.fill_update(update, live, now))
            self.updates_replayed = len(updates)
            return
        recorder, syncing = self.recorder, [True]
        if recorder is not None:  # (the store has no listener removal: it stops hearing)
            def heard(event: Event) -> None:
                if syncing and event.raw is not None:
                    recorder["updates"].append(
                        (event.resource, blanked_update(orjson.loads(event.raw))))

            self._store.add_listener(heard, (f"{fc}/flowschemas",))
        sync_status()
        syncing.clear()
