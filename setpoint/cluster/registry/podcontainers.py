"""The containers of a pod spec in the order Kubernetes visits them (pkg/apis/core/pods
``VisitContainersWithPath``; pkg/api/pod ``VisitContainers`` with every kind enabled): init
containers, regular containers, then ephemeral containers, each with its field path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from setpoint.machinery.objects import Obj

CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")


def visit_containers_with_path(spec: Obj, path: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Each container with its path (``spec.initContainers[0]``...); an entry that is not an
    object is passed over (decoding refuses it before validation sees it)."""
    for key in CONTAINER_FIELDS:
        items = spec.get(key)
        for i, container in enumerate(items if isinstance(items, list) else []):
            if isinstance(container, dict):
                yield container, f"{path}.{key}[{i}]"
