"""What the server's parts may ask of storage, each no more than it uses.

Admission plugins, the in-server controllers, the RBAC authorizer and the webhook client
are handed the store under one of these narrow faces when the server is assembled
(``setpoint.cluster.apiserver``), as kube-apiserver's admission initializers hand each plugin
only the informers and clients it declares (k8s.io/apiserver/pkg/admission/initializer).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from setpoint.cluster.storage.store import Event


class Reader(Protocol):
    """Reads of stored objects, by storage key (``/pods``), namespace and name."""

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list(self, resource: str, namespace: str | None = None,
             labels: tuple[tuple[str, str], ...] = ()) -> builtins.list[dict[str, Any]]: ...

    def count(self, resource: str) -> int: ...


class Informer(Reader, Protocol):
    """Reads, and a call on every stored change: what an informer gives a controller."""

    def add_listener(self, listener: Callable[[Event], None],
                     resources: Iterable[str] | None = None) -> None: ...
