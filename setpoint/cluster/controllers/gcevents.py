"""The garbage collector's one event: ``OwnerRefInvalidNamespace``.

kube-controller-manager's GraphBuilder (pkg/controller/garbagecollector/graph_builder.go
``reportInvalidNamespaceOwnerRef``) warns about a dependent that names, by uid, an owner
observed in another namespace (or a namespaced owner from a cluster-scoped dependent):
owners are looked up in the dependent's own namespace, so that reference can never hold.
The Event is what client-go's recorder (tools/record/event.go ``makeEvent``) writes for
``Eventf(ref, Warning, reason, message)`` from the ``garbage-collector-controller`` source.
"""

from __future__ import annotations

import time

from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.objects import Obj

SOURCE_COMPONENT = "garbage-collector-controller"
REASON_INVALID_NAMESPACE = "OwnerRefInvalidNamespace"


def owner_identity(ref: Obj, namespace: str) -> str:
    """graph.go ``objectReference.String``: the reference's coordinates in ``namespace``."""
    return (f"[{ref.get('apiVersion', '')}/{ref.get('kind', '')}, namespace: {namespace}, "
            f"name: {ref.get('name', '')}, uid: {ref.get('uid', '')}]")


class EventNames:
    """``<object>.<hex Unix nanoseconds>``, increasing so two events of one instant differ."""

    def __init__(self) -> None:
        self._last = 0

    def __call__(self, name: str) -> str:
        self._last = max(time.time_ns(), self._last + 1)
        return f"{name}.{self._last:x}"


def invalid_namespace_event(dependent: Obj, api_version: str, kind: str, ref: Obj,
                            now: str, name: str) -> Obj:
    """The Warning about ``dependent`` whose owner reference ``ref`` names an object of
    another namespace; ``now`` its timestamps, ``name`` its name."""
    meta = dependent["metadata"]
    namespace = str(meta.get("namespace") or "")
    involved: Obj = {"kind": kind, "namespace": namespace, "name": meta["name"],
                     "uid": meta.get("uid", ""), "apiVersion": api_version}
    if not namespace:
        del involved["namespace"]  # (omitempty)
    return {
        "apiVersion": "v1", "kind": "Event",
        # the recorder files an event about a cluster-scoped object in "default"
        "metadata": {"name": name, "namespace": namespace or "default"},
        "involvedObject": involved,
        "reason": REASON_INVALID_NAMESPACE,
        "message": f"ownerRef {owner_identity(ref, namespace)} does not exist in namespace "
                   f"{go_quote(namespace)}",
        "source": {"component": SOURCE_COMPONENT},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": "Warning",
        "reportingComponent": SOURCE_COMPONENT, "reportingInstance": "",
    }
