"""The ReplicationController manager: the ReplicaSet controller over core/v1
ReplicationControllers.

kube-controller-manager runs ``pkg/controller/replication`` as the ReplicaSet controller's
``NewBaseController`` given the ReplicationController kind, its informer and the
``replication-controller`` event source; ``conversion.go`` only turns the RC's map selector
into a LabelSelector's ``matchLabels``. Pods it creates are controlled by the RC (``v1``
``ReplicationController``), and its status has the ReplicaSet's fields and
``ReplicaFailure`` condition.
"""

from __future__ import annotations

from setpoint.client import Kind
from setpoint.machinery.labels import Selector
from setpoint.machinery.objects import Obj
from setpoint.runtime import Manager
from setpoint.workloads.controllers.podcontrol import component_recorder, selector_of
from setpoint.workloads.controllers.replicaset import ReplicaSetReconciler, base_controller
from setpoint.workloads.settings import WorkloadSettings

REPLICATION_CONTROLLER = Kind("v1", "ReplicationController")


class ReplicationControllerReconciler(ReplicaSetReconciler):
    """Syncs one ReplicationController per request."""

    kind = REPLICATION_CONTROLLER

    def selector(self, rs: Obj) -> Selector:
        """``conversion.go``: the map selector as ``matchLabels`` (an RC without one selects
        nothing, as ``labels.SelectorFromSet`` of an empty set would be refused by
        validation before it is stored)."""
        match_labels = (rs.get("spec") or {}).get("selector") or {}
        return selector_of({"matchLabels": match_labels})


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the ReplicationController manager (events from ``replication-controller``)."""
    reconciler = ReplicationControllerReconciler(manager)
    reconciler.events = component_recorder(manager, "replication-controller")
    manager.add(base_controller(manager, reconciler, "replicationcontroller"))
