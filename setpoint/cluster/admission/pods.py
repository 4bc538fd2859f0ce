"""What admission adds to every pod (ServiceAccount plugin and default tolerations)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from setpoint.cluster.registry.types import ResourceType

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer


class PodDefaults:
    def __init__(self, api: APIServer) -> None:
        self._api = api

    def __call__(self, operation: str, rt: ResourceType, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> None:
        if operation != "CREATE" or rt.group or rt.kind != "Pod":
            return
        # filled in by the admission work (service account token volume, tolerations)
