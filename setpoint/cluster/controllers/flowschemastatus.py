"""The API Priority and Fairness config controller's status writes: each FlowSchema's
``Dangling`` condition says whether the PriorityLevelConfiguration it names exists.

As k8s.io/apiserver pkg/util/flowcontrol/apf_controller.go: whenever a FlowSchema or a
priority level changes, every FlowSchema is looked at (``digestFlowSchemasLocked``);
``presyncFlowSchemaStatus`` wants ``Dangling`` False/``Found`` or True/``NotFound`` with its
message, and when the stored condition differs in status, reason or message, the controller
applies the status (server-side apply, forced) as
``api-priority-and-fairness-config-consumer-v1``, with a new lastTransitionTime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.controllers.statusapply import StatusApplier
from setpoint.cluster.storage import Event
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

FLOW_SCHEMAS = "flowcontrol.apiserver.k8s.io/flowschemas"
PRIORITY_LEVELS = "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations"
MANAGER = "api-priority-and-fairness-config-consumer-v1"


def dangling_condition(level: str, exists: bool, now: str) -> Obj:
    """``presyncFlowSchemaStatus``'s desired condition."""
    if exists:
        status, reason = "False", "Found"
        message = (f'This FlowSchema references the PriorityLevelConfiguration object named '
                   f'"{level}" and it exists')
    else:
        status, reason = "True", "NotFound"
        message = (f'This FlowSchema references the PriorityLevelConfiguration object named '
                   f'"{level}" but there is no such object')
    return {"type": "Dangling", "status": status, "lastTransitionTime": now,
            "reason": reason, "message": message}


class FlowSchemaStatus(StatusApplier):
    """Keeps every FlowSchema's Dangling condition true to the stored priority levels."""

    resource = FLOW_SCHEMAS
    manager = MANAGER

    def __init__(self, store: Informer, rest: REST, rt: ResourceType) -> None:
        super().__init__(store, rest, rt, "priority_and_fairness_config_queue",
                         (FLOW_SCHEMAS, PRIORITY_LEVELS))

    def __repr__(self) -> str:
        return "FlowSchemaStatus(apf config controller)"

    def sync_now(self) -> None:
        """Write every condition at once (the server's start, after the bootstrap
        configuration is stored); later changes go through the queue."""
        self.sync_all()

    def _on_event(self, event: Event) -> None:
        if event.resource == FLOW_SCHEMAS:
            super()._on_event(event)
        else:
            self.enqueue_all()  # a level came or went

    def desired_status(self, obj: Obj) -> Obj | None:
        level = str(((obj.get("spec") or {}).get("priorityLevelConfiguration") or {})
                    .get("name") or "")
        exists = self._store.get(PRIORITY_LEVELS, "", level) is not None
        wanted = dangling_condition(level, exists, self._rest.clock())
        current: Obj = next((c for c in (obj.get("status") or {}).get("conditions") or ()
                             if c.get("type") == "Dangling"), {})
        if all(current.get(k) == wanted[k] for k in ("status", "reason", "message")):
            return None
        return {"conditions": [wanted]}
