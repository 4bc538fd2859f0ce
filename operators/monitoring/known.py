"""The objects of one kind a controller has reconciled, so that a change to something
many of them may select (a ServiceMonitor, an Endpoints, a Secret) enqueues each of them:
selection is by label selectors in both directions, so there is no owner to map to.

Every object is reconciled once when the operator starts (the initial list), so the set
is complete from then on; an entry left by a deleted object only causes a request that
finds nothing to reconcile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from setpoint.runtime import Request


class Known:
    def __init__(self) -> None:
        self._requests: set[Request] = set()

    def __repr__(self) -> str:
        return f"Known({len(self._requests)})"

    def add(self, namespace: str, name: str) -> None:
        self._requests.add(Request(namespace, name))

    def discard(self, namespace: str, name: str) -> None:
        self._requests.discard(Request(namespace, name))

    def all(self, _obj: Any = None) -> Iterable[Request]:
        """A map function: every known object."""
        return sorted(self._requests)

    def in_namespace(self, obj: dict[str, Any]) -> Iterable[Request]:
        """A map function: the known objects in the changed object's namespace."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        return sorted(r for r in self._requests if r.namespace == namespace)
