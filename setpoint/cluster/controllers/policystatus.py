"""kube-controller-manager's ``validatingadmissionpolicy-status-controller``: each
ValidatingAdmissionPolicy's ``status.observedGeneration`` and ``status.typeChecking``.

As kubernetes pkg/controller/validatingadmissionpolicystatus/controller.go ``reconcile``: a
policy whose generation is past its status's observedGeneration gets its status applied
(server-side apply, forced, as field manager ``validatingadmissionpolicy-status``) with the
generation observed and the type checker's warnings (k8s.io/apiserver
policy/validating/typechecking.go, :mod:`setpoint.cluster.admission.policy.typechecking`,
handed in by the API server that has the schemas:
each validation's expression and messageExpression against the OpenAPI schemas of the
matched kinds and the paramKind) as ``typeChecking.expressionWarnings``, absent when there
are none (the apply configuration's ``omitempty``); the controller writes no conditions.
"""

from __future__ import annotations

from collections.abc import Callable
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

POLICIES = "admissionregistration.k8s.io/validatingadmissionpolicies"
MANAGER = "validatingadmissionpolicy-status"
APPLY = "application/apply-patch+yaml"


class PolicyStatus:
    """Keeps every policy's observedGeneration up with its generation."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType,
                 type_check: Callable[[Obj], list[Obj]]) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._type_check = type_check  # typechecking.go TypeChecker.Check
        self.queue: WorkQueue[str] = WorkQueue(MANAGER, self._sync)
        store.add_listener(self._on_event, (POLICIES,))

    def __repr__(self) -> str:
        return "PolicyStatus(validatingadmissionpolicy-status-controller)"

    def start(self) -> None:
        """The policies already stored (a restart), then every change through the queue."""
        for policy in self._store.list(POLICIES):
            self.queue.add(policy["metadata"]["name"])

    def _on_event(self, event: Event) -> None:
        if event.type != "DELETED":
            self.queue.add(event.name)

    def _sync(self, name: str) -> None:
        policy = self._store.get(POLICIES, "", name)
        if policy is None:
            return
        generation = int(policy["metadata"].get("generation") or 0)
        observed = int((policy.get("status") or {}).get("observedGeneration") or 0)
        if generation <= observed:
            return
        warnings = self._type_check(policy)
        type_checking = {"expressionWarnings": warnings} if warnings else {}
        body = {"apiVersion": self._rt.api_version, "kind": self._rt.kind,
                "metadata": {"name": name},
                "status": {"observedGeneration": generation, "typeChecking": type_checking}}
        opts = WriteOptions(field_manager=MANAGER, field_validation="Ignore", force=True)
        try:
            self._rest.patch(self._rt, None, name, orjson.dumps(body), APPLY, opts,
                             subresource="status")
        except errors.StatusError as err:
            if err.code != 404:  # deleted meanwhile: its event is coming
                raise
