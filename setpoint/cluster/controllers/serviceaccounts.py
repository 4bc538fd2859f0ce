"""The ServiceAccounts controller: every active namespace has the ``default`` ServiceAccount.

As kube-controller-manager's ``serviceaccount-controller``: a namespace that is added or
updated, or whose ``default`` ServiceAccount is deleted, is synced; the account is created
unless the namespace is terminating (a create refused because the namespace terminates or is
gone is not an error).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.controllers.resources import NAMESPACES, SERVICEACCOUNTS, controller_write
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

DEFAULT_SERVICE_ACCOUNT = "default"
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def namespace_active(namespace: Obj) -> bool:
    """Whether a namespace accepts new content (phase Active, not being deleted)."""
    status = namespace.get("status") or {}
    return (not namespace["metadata"].get("deletionTimestamp")
            and status.get("phase", "Active") == "Active")


def refused_by_namespace(err: StatusError) -> bool:
    """A create that failed only because its namespace is terminating or gone."""
    if err.code == 404 and err.kind == "namespaces":
        return True
    return any(c.reason == NAMESPACE_TERMINATING_CAUSE for c in err.causes)


class ServiceAccountsController:
    """Creates the ``default`` ServiceAccount in every active namespace."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self.queue: WorkQueue[str] = WorkQueue("serviceaccount", self._sync)
        store.add_listener(self._on_event, (NAMESPACES, SERVICEACCOUNTS))

    def start(self) -> None:
        for namespace in self._store.list(NAMESPACES):
            self.queue.add(namespace["metadata"]["name"])

    def _on_event(self, event: Event) -> None:
        if event.resource == NAMESPACES:
            if event.type != "DELETED":
                self.queue.add(event.name)
        elif (event.resource == SERVICEACCOUNTS and event.type == "DELETED"
              and event.name == DEFAULT_SERVICE_ACCOUNT):
            self.queue.add(event.namespace)

    def _sync(self, namespace_name: str) -> None:
        store = self._store
        namespace = store.get(NAMESPACES, "", namespace_name)
        if namespace is None or not namespace_active(namespace):
            return
        if store.get(SERVICEACCOUNTS, namespace_name, DEFAULT_SERVICE_ACCOUNT) is not None:
            return
        body = {"metadata": {"name": DEFAULT_SERVICE_ACCOUNT}}
        try:
            self._rest.create(self._rt, namespace_name, Decoded(body), controller_write())
        except StatusError as err:
            if err.reason == "AlreadyExists" or refused_by_namespace(err):
                return
            raise
