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

from setpoint.cluster.controllers.statusapply import StatusApplier
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

POLICIES = "admissionregistration.k8s.io/validatingadmissionpolicies"
MANAGER = "validatingadmissionpolicy-status"


class PolicyStatus(StatusApplier):
    """Keeps every policy's observedGeneration up with its generation."""

    resource = POLICIES
    manager = MANAGER

    def __init__(self, store: Informer, rest: REST, rt: ResourceType,
                 type_check: Callable[[Obj], list[Obj]]) -> None:
        super().__init__(store, rest, rt, MANAGER, (POLICIES,))
        self._type_check = type_check  # typechecking.go TypeChecker.Check

    def __repr__(self) -> str:
        return "PolicyStatus(validatingadmissionpolicy-status-controller)"

    def start(self) -> None:
        """The policies already stored (a restart), then every change through the queue."""
        self.enqueue_all()

    def desired_status(self, obj: Obj) -> Obj | None:
        generation = int(obj["metadata"].get("generation") or 0)
        observed = int((obj.get("status") or {}).get("observedGeneration") or 0)
        if generation <= observed:
            return None
        warnings = self._type_check(obj)
        type_checking = {"expressionWarnings": warnings} if warnings else {}
        return {"observedGeneration": generation, "typeChecking": type_checking}
