"""A controller that keeps a cluster-scoped kind's status by applying it: a key per object
name on a queue; each sync reads the stored object, asks what its status should say and,
when that differs from what it says, applies it (server-side apply of the status
subresource, forced, under the controller's field manager). kube-controller-manager's
``validatingadmissionpolicy-status-controller`` (``policystatus.py``) and the API Priority
and Fairness config controller (``flowschemastatus.py``) write their statuses so."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import orjson

from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.storage import Event
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

APPLY = "application/apply-patch+yaml"


class StatusApplier:
    """Applies ``desired_status`` to each object of ``resource`` that needs it."""

    resource: ClassVar[str]  # the storage key of the kind whose status is kept
    manager: ClassVar[str]  # the field manager of the applies

    def __init__(self, store: Informer, rest: REST, rt: ResourceType, queue_name: str,
                 watched: tuple[str, ...]) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self.queue: WorkQueue[str] = WorkQueue(queue_name, self._sync)
        store.add_listener(self._on_event, watched)

    def desired_status(self, obj: Obj) -> Obj | None:
        """The status to apply to ``obj``, or None when what it has is right."""
        raise NotImplementedError

    def enqueue_all(self) -> None:
        """Every stored object, looked at on a later turn of the loop."""
        for obj in self._store.list(self.resource):
            self.queue.add(obj["metadata"]["name"])

    def sync_all(self) -> None:
        """Every stored object, looked at now."""
        for obj in self._store.list(self.resource):
            self._sync(obj["metadata"]["name"])

    def _on_event(self, event: Event) -> None:
        if event.type != "DELETED":
            self.queue.add(event.name)

    def _sync(self, name: str) -> None:
        obj = self._store.get(self.resource, "", name)
        if obj is None:
            return
        status = self.desired_status(obj)
        if status is None:
            return
        body = {"apiVersion": self._rt.api_version, "kind": self._rt.kind,
                "metadata": {"name": name}, "status": status}
        # (a body built here has no repeated keys for the apply to look for)
        opts = WriteOptions(field_manager=self.manager, field_validation="Ignore", force=True)
        try:
            self._rest.patch(self._rt, None, name, orjson.dumps(body), APPLY, opts,
                             subresource="status")
        except errors.StatusError as err:
            if err.code != 404:  # deleted meanwhile: its event is coming
                raise
