"""ClusterRole aggregation: a ClusterRole with an ``aggregationRule`` holds the rules of the
ClusterRoles its selectors match.

As kube-controller-manager's ``clusterrole-aggregation`` controller: whenever a ClusterRole
changes, every aggregating ClusterRole is synced; its rules become those of the matching
ClusterRoles (itself excluded), in the order of their names, each rule once, written by
``clusterrole-aggregation-controller`` only when they differ. Operators use it to extend the
``view``/``edit``/``admin`` roles: a ClusterRole labelled
``rbac.authorization.k8s.io/aggregate-to-view: "true"`` adds its rules to every aggregate
that selects that label.

An aggregate that selects other aggregates (``admin`` selects ``edit``, which selects
``view``) takes their rules as their own syncs will make them, not as stored: the same rules
once every aggregate is synced, written in one pass whatever the order of the syncs. Taken as
stored, as Go's controller takes them, the bootstrap's ``admin`` was written three times and
``edit`` twice at every start, each write through the whole update path while the server's
first clients waited (docs/benchmarks.md, Start-up); a cycle of aggregates is still read as
stored.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from setpoint.cluster.controllers.queue import WorkQueue
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery import labels
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

CLUSTER_ROLES = "rbac.authorization.k8s.io/clusterroles"
MANAGER = "clusterrole-aggregation-controller"


class ClusterRoleAggregation:
    """Keeps aggregated ClusterRoles equal to the union of what they select."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self.queue: WorkQueue[str] = WorkQueue("clusterrole-aggregation", self._sync)
        # the names of the aggregating roles, kept from the events (the controller's lister):
        # a change enqueues them without decoding every ClusterRole again, which made the
        # creation of n roles (the bootstrap policy's, say) cost n * n decodes
        self._aggregating = {role["metadata"]["name"] for role in store.list(CLUSTER_ROLES)
                             if role.get("aggregationRule")}
        store.add_listener(self._on_event, (CLUSTER_ROLES,))

    def start(self) -> None:
        self._enqueue_aggregates()

    def _on_event(self, event: Event) -> None:
        if event.resource != CLUSTER_ROLES:
            return
        if event.type != "DELETED" and event.obj.get("aggregationRule"):
            self._aggregating.add(event.name)
        else:
            self._aggregating.discard(event.name)
        self._enqueue_aggregates()

    def _enqueue_aggregates(self) -> None:
        for name in sorted(self._aggregating):
            self.queue.add(name)

    def _sync(self, name: str) -> None:
        role = self._store.get(CLUSTER_ROLES, "", name)
        if role is None or not role.get("aggregationRule"):
            return
        rules = self._aggregated_rules(role, (name,))
        if rules == (role.get("rules") or []):
            return
        updated = copy.deepcopy(role)
        updated["rules"] = rules
        self._rest.update(self._rt, None, name, Decoded(updated),
                          WriteOptions(field_manager=MANAGER, field_validation="Ignore"))

    def _aggregated_rules(self, role: Obj, path: tuple[str, ...]) -> list[Obj]:
        """The rules of the ClusterRoles ``role`` selects (itself excluded), in the order of
        their names, each rule once; a selected aggregate's as its own sync makes them
        (``path``: the aggregates being computed, whose stored rules a cycle reads)."""
        name = path[-1]
        selected: dict[str, Obj] = {}
        for raw in (role["aggregationRule"].get("clusterRoleSelectors") or []):
            try:
                selector = labels.from_label_selector(raw)
            except labels.SelectorError:
                continue
            # the label index finds the roles a selector's equalities hold (the bootstrap
            # policy's all are), without decoding every ClusterRole per selector
            for other in self._store.list(CLUSTER_ROLES, labels=selector.equalities):
                other_name = other["metadata"]["name"]
                if other_name != name and selector.matches(
                        other["metadata"].get("labels") or {}):
                    selected[other_name] = other
        rules: list[Obj] = []
        for other_name in sorted(selected):
            other = selected[other_name]
            if other.get("aggregationRule") and other_name not in path:
                theirs = self._aggregated_rules(other, (*path, other_name))
            else:
                theirs = other.get("rules") or []
            for rule in theirs:
                if rule not in rules:
                    rules.append(rule)
        return rules
