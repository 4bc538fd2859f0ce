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

import logging
from typing import TYPE_CHECKING

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

log = logging.getLogger("setpoint.cluster.controllers")

FLOW_SCHEMAS = "flowcontrol.apiserver.k8s.io/flowschemas"
PRIORITY_LEVELS = "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations"
MANAGER = "api-priority-and-fairness-config-consumer-v1"
APPLY = "application/apply-patch+yaml"


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


class FlowSchemaStatus:
    """Keeps every FlowSchema's Dangling condition true to the stored priority levels."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self.queue: WorkQueue[str] = WorkQueue("priority_and_fairness_config_queue",
                                               self._sync)
        store.add_listener(self._on_event, (FLOW_SCHEMAS, PRIORITY_LEVELS))

    def __repr__(self) -> str:
        return "FlowSchemaStatus(apf config controller)"

    def sync_now(self) -> None:
        """Write every condition at once (the server's start, after the bootstrap
        configuration is stored); later changes go through the queue."""
        for schema in self._store.list(FLOW_SCHEMAS):
            self._sync(schema["metadata"]["name"])

    def _on_event(self, event: Event) -> None:
        if event.resource == FLOW_SCHEMAS:
            if event.type != "DELETED":
                self.queue.add(event.name)
            return
        for schema in self._store.list(FLOW_SCHEMAS):  # a level came or went
            self.queue.add(schema["metadata"]["name"])

    def _sync(self, name: str) -> None:
        schema = self._store.get(FLOW_SCHEMAS, "", name)
        if schema is None:
            return
        level = str(((schema.get("spec") or {}).get("priorityLevelConfiguration") or {})
                    .get("name") or "")
        exists = self._store.get(PRIORITY_LEVELS, "", level) is not None
        wanted = dangling_condition(level, exists, self._rest.clock())
        current: Obj = next((c for c in (schema.get("status") or {}).get("conditions") or ()
                             if c.get("type") == "Dangling"), {})
        if all(current.get(k) == wanted[k] for k in ("status", "reason", "message")):
            return
        body = {"apiVersion": self._rt.api_version, "kind": self._rt.kind,
                "metadata": {"name": name}, "status": {"conditions": [wanted]}}
        # (a body built here has no repeated keys for the apply to look for)
        opts = WriteOptions(field_manager=MANAGER, field_validation="Ignore", force=True)
        try:
            self._rest.patch(self._rt, None, name, orjson.dumps(body), APPLY, opts,
                             subresource="status")
        except errors.StatusError as err:
            if err.code != 404:  # deleted meanwhile: its event is coming
                raise
