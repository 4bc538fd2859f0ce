"""Required inter-pod affinity and anti-affinity (the InterPodAffinity filter).

Before filtering, three counts are made over every pod already on a node, keyed by
(topology key, value of that label on the pod's node):

- existing anti-affinity: existing pods whose required anti-affinity terms match the
  incoming pod (the incoming pod must stay out of those topologies);
- affinity: existing pods that match *all* the incoming pod's affinity terms;
- anti-affinity: existing pods that match one of the incoming pod's anti-affinity terms.

A node then passes when, for its own label values, every affinity term has a match (or no
pod anywhere matches and the pod matches its own terms: the first of a group that wants to
be together), no anti-affinity term has one, and no existing pod's anti-affinity forbids it.
A node lacking a term's topology label fails affinity and is ignored by anti-affinity.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from setpoint.workloads.scheduler.cache import NodeInfo, PodInfo
from setpoint.workloads.scheduler.predicates import Code, Status
from setpoint.workloads.scheduler.terms import AffinityTerm, NamespaceLabels, required_terms

ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def _matches_all(terms: Sequence[AffinityTerm], namespace: str, labels: Mapping[str, str],
                 namespace_labels: NamespaceLabels) -> bool:
    return bool(terms) and all(t.matches(namespace, labels, namespace_labels) for t in terms)


class AffinityState:
    """The pre-filter counts for one incoming pod over one snapshot of nodes."""

    def __init__(self, pod: Mapping[str, Any], nodes: Iterable[NodeInfo],
                 namespace_labels: NamespaceLabels) -> None:
        metadata = pod.get("metadata") or {}
        self.namespace = str(metadata.get("namespace") or "")
        self.labels: Mapping[str, str] = metadata.get("labels") or {}
        self.affinity = required_terms(pod, "podAffinity")
        self.anti_affinity = required_terms(pod, "podAntiAffinity")
        self.existing_anti: Counter[tuple[str, str]] = Counter()
        self.affinity_counts: Counter[tuple[str, str]] = Counter()
        self.anti_counts: Counter[tuple[str, str]] = Counter()
        self._namespace_labels = namespace_labels
        own_terms = bool(self.affinity or self.anti_affinity)
        for node in nodes:
            # most pods have no terms and most nodes no pod with anti-affinity: skip them
            if own_terms or node.pods_with_required_anti_affinity:
                self._count(node)

    @property
    def active(self) -> bool:
        """False when no term anywhere concerns this pod (the filter can be skipped)."""
        return bool(self.affinity or self.anti_affinity or self.existing_anti)

    def _count(self, node: NodeInfo) -> None:
        labels = node.labels
        for existing in node.pods_with_required_anti_affinity.values():
            self._count_existing_anti(existing, labels)
        if not (self.affinity or self.anti_affinity):
            return
        for existing in node.pods.values():
            if _matches_all(self.affinity, existing.namespace, existing.labels,
                            self._namespace_labels):
                for term in self.affinity:
                    if term.topology_key in labels:
                        self.affinity_counts[(term.topology_key, labels[term.topology_key])] += 1
            for term in self.anti_affinity:
                if term.topology_key in labels and term.matches(
                        existing.namespace, existing.labels, self._namespace_labels):
                    self.anti_counts[(term.topology_key, labels[term.topology_key])] += 1

    def _count_existing_anti(self, existing: PodInfo, node_labels: Mapping[str, str]) -> None:
        for term in existing.anti_affinity:
            if term.topology_key in node_labels and term.matches(
                    self.namespace, self.labels, self._namespace_labels):
                self.existing_anti[(term.topology_key, node_labels[term.topology_key])] += 1

    def _satisfies_affinity(self, labels: Mapping[str, str]) -> bool:
        pods_exist = True
        for term in self.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False
            if self.affinity_counts[(term.topology_key, value)] <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # the first pod of a group with affinity to itself must not wait forever
        return not +self.affinity_counts and _matches_all(
            self.affinity, self.namespace, self.labels, self._namespace_labels)

    def _satisfies_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        for term in self.anti_affinity:
            value = labels.get(term.topology_key)
            if value is not None and self.anti_counts[(term.topology_key, value)] > 0:
                return False
        return True

    def _satisfies_existing_anti_affinity(self, labels: Mapping[str, str]) -> bool:
        if not self.existing_anti:
            return True
        return not any(self.existing_anti[(k, v)] > 0 for k, v in labels.items())

    def filter(self, node: NodeInfo) -> Status | None:
        """The InterPodAffinity filter for ``node``."""
        labels = node.labels
        if not self._satisfies_affinity(labels):
            return Status(Code.UNRESOLVABLE, (ERR_AFFINITY,), "InterPodAffinity")
        if not self._satisfies_anti_affinity(labels):
            return Status(Code.UNSCHEDULABLE, (ERR_ANTI_AFFINITY,), "InterPodAffinity")
        if not self._satisfies_existing_anti_affinity(labels):
            return Status(Code.UNSCHEDULABLE, (ERR_EXISTING_ANTI_AFFINITY,), "InterPodAffinity")
        return None
