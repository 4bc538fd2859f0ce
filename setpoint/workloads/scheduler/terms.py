"""Pod affinity terms resolved once: namespaces, selectors and topology key."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from setpoint.machinery.labels import NOTHING, Selector, SelectorError, from_label_selector

NamespaceLabels = Callable[[str], Mapping[str, str]]


@dataclass(frozen=True)
class AffinityTerm:
    """A ``PodAffinityTerm`` resolved against the pod that declares it."""

    namespaces: frozenset[str]
    selector: Selector
    namespace_selector: Selector
    topology_key: str

    @classmethod
    def of(cls, owner_namespace: str, term: Mapping[str, Any]) -> AffinityTerm:
        namespaces = frozenset(term.get("namespaces") or ())
        raw_ns_selector = term.get("namespaceSelector")
        if not namespaces and raw_ns_selector is None:
            namespaces = frozenset((owner_namespace,))
        try:
            selector = from_label_selector(term.get("labelSelector"))
            ns_selector = NOTHING if raw_ns_selector is None \
                else from_label_selector(raw_ns_selector)
        except SelectorError:
            selector, ns_selector = NOTHING, NOTHING
        return cls(namespaces, selector, ns_selector, str(term.get("topologyKey") or ""))

    def matches(self, namespace: str, labels: Mapping[str, str],
                namespace_labels: NamespaceLabels) -> bool:
        """Whether a pod in ``namespace`` with ``labels`` is selected by the term."""
        if namespace in self.namespaces or (
                not self.namespace_selector.nothing
                and self.namespace_selector.matches(namespace_labels(namespace))):
            return self.selector.matches(labels)
        return False


def required_terms(pod: Mapping[str, Any], kind: str) -> list[AffinityTerm]:
    """The required terms of ``podAffinity`` or ``podAntiAffinity`` (``kind``)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    section = (((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {})
    return [AffinityTerm.of(namespace, t)
            for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()]
