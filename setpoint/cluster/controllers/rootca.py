"""The root CA publisher: ConfigMap ``kube-root-ca.crt`` with the server's CA in every namespace.

As kube-controller-manager's ``root-ca-certificate-publisher``: a namespace that is added (or
updated while active), or whose ConfigMap is changed or deleted, is synced; the ConfigMap is
created if missing, and rewritten if its ``ca.crt`` differs or its description annotation is
missing. Pods mount it through their ``kube-api-access-*`` projected volume.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.controllers.resources import CONFIGMAPS, NAMESPACES, controller_write
from setpoint.cluster.controllers.serviceaccounts import namespace_active, refused_by_namespace
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


class RootCAPublisher:
    """Keeps ``kube-root-ca.crt`` in every namespace equal to the server's CA bundle."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType, ca_pem: bytes) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._ca_pem = ca_pem
        self.queue: WorkQueue[str] = WorkQueue("root-ca-certificate-publisher", self._sync)
        store.add_listener(self._on_event, (NAMESPACES, CONFIGMAPS))

    @property
    def data(self) -> dict[str, str]:
        return {"ca.crt": self._ca_pem.decode()}

    def start(self) -> None:
        for namespace in self._store.list(NAMESPACES):
            self.queue.add(namespace["metadata"]["name"])

    def _on_event(self, event: Event) -> None:
        if event.resource == NAMESPACES:
            if event.type == "ADDED" or (event.type == "MODIFIED"
                                         and namespace_active(event.obj)):
                self.queue.add(event.name)
        elif (event.resource == CONFIGMAPS and event.name == ROOT_CA_CONFIGMAP
              and event.type in ("MODIFIED", "DELETED")):
            self.queue.add(event.namespace)

    def _sync(self, namespace: str) -> None:
        rest = self._rest
        data = self.data
        live = self._store.get(CONFIGMAPS, namespace, ROOT_CA_CONFIGMAP)
        if live is None:
            body = {"metadata": {"name": ROOT_CA_CONFIGMAP,
                                 "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": data}
            try:
                rest.create(self._rt, namespace, Decoded(body), controller_write())
            except StatusError as err:
                if not refused_by_namespace(err):
                    raise
            return
        annotations = live["metadata"].get("annotations") or {}
        if live.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        new = copy.deepcopy(live)
        new["data"] = data
        new_annotations = new["metadata"].setdefault("annotations", {})
        # an existing (even empty) description is the user's: only a missing one is added
        new_annotations.setdefault(DESCRIPTION_ANNOTATION, DESCRIPTION)
        rest.update(self._rt, namespace, ROOT_CA_CONFIGMAP, Decoded(new), controller_write())
