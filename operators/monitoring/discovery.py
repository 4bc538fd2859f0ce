"""Which objects a Prometheus selects, and the scrape targets behind them.

The selection follows the prometheus-operator: a nil ``serviceMonitorSelector`` (or
``ruleSelector``) selects nothing, an empty one everything; a nil namespace selector means
the Prometheus' own namespace, an empty one every namespace. A ServiceMonitor's own
``namespaceSelector`` then says where its Services are (default: its own namespace).

Targets are the *ready* addresses of the selected Services' Endpoints, on the port the
ServiceMonitor endpoint names (the Service port's name, which Endpoints carry) or its
``targetPort`` (a number, or the container port's name when the Endpoints port has it),
labelled as the prometheus-operator's relabelings label them: ``namespace``, ``service``,
``pod``, ``endpoint`` and ``job`` (the ``jobLabel`` value, or the Service's name).
The operator writes them as ``static_configs``; when they move, the configuration changes
and is hot-reloaded like any other change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from operators.monitoring.resources.common import NamespaceSelector
from operators.monitoring.resources.servicemonitor import Endpoint
from setpoint.machinery.labels import from_label_selector
from setpoint.resources.models.core_v1 import Endpoints, Namespace, Service
from setpoint.resources.models.meta_v1 import LabelSelector


class Labelled(Protocol):
    @property
    def metadata(self) -> Any: ...


L = TypeVar("L", bound=Labelled)


def selector_dict(selector: LabelSelector | None) -> dict[str, Any] | None:
    return None if selector is None else selector.model_dump()


def matches(selector: LabelSelector | None, labels: Mapping[str, str] | None) -> bool:
    """A LabelSelector's verdict; nil selects nothing."""
    if selector is None:
        return False
    return from_label_selector(selector_dict(selector)).matches(labels or {})


def namespaces_selected(selector: LabelSelector | None, own: str,
                        namespaces: Iterable[Namespace]) -> set[str]:
    """The namespaces a Prometheus' ``*NamespaceSelector`` picks: nil -> its own."""
    if selector is None:
        return {own}
    return {str(n.metadata.name) for n in namespaces
            if matches(selector, n.metadata.labels)}


def select(objects: Iterable[L], selector: LabelSelector | None,
           namespaces: set[str]) -> list[L]:
    """The objects in ``namespaces`` whose labels the selector matches, sorted by
    namespace/name so that the generated configuration is stable."""
    chosen = [o for o in objects if o.metadata.namespace in namespaces
              and matches(selector, o.metadata.labels)]
    return sorted(chosen, key=lambda o: (o.metadata.namespace, o.metadata.name))


def monitor_namespaces(selector: NamespaceSelector | None, own: str,
                       all_namespaces: Iterable[str]) -> set[str]:
    """A ServiceMonitor's ``namespaceSelector``: any, matchNames, or its own namespace."""
    if selector is not None and selector.any:
        return set(all_namespaces)
    if selector is not None and selector.match_names:
        return set(selector.match_names)
    return {own}


@dataclass(frozen=True)
class TargetGroup:
    """A ``static_configs`` entry: addresses with common labels."""

    targets: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)

    def to_config(self) -> dict[str, Any]:
        return {"targets": list(self.targets), "labels": dict(sorted(self.labels.items()))}


def _port_matches(endpoint: Endpoint, port: Any, service: Service) -> bool:
    if endpoint.port is not None:
        return bool(port.name == endpoint.port)
    wanted = endpoint.target_port
    if isinstance(wanted, int):
        return bool(port.port == wanted)
    if wanted is not None:
        # a named targetPort: the Service port whose targetPort is that name
        ports = (service.spec.ports if service.spec is not None else None) or ()
        return any(sp.target_port == wanted and sp.name == port.name for sp in ports)
    return True


def service_targets(service: Service, endpoints: Endpoints | None, endpoint: Endpoint,
                    job_label: str | None, target_labels: Iterable[str] = ()
                    ) -> list[TargetGroup]:
    """One group per ready address of ``service`` on the endpoint's port."""
    if endpoints is None:
        return []
    service_labels = service.metadata.labels or {}
    name = str(service.metadata.name)
    job = service_labels.get(job_label, name) if job_label else name
    groups = []
    for subset in endpoints.subsets or ():
        for port in subset.ports or ():
            if not _port_matches(endpoint, port, service):
                continue
            for address in subset.addresses or ():
                labels = {"namespace": str(service.metadata.namespace), "service": name,
                          "job": job, "endpoint": port.name or str(port.port)}
                ref = address.target_ref
                if ref is not None and ref.kind == "Pod" and ref.name:
                    labels["pod"] = ref.name
                labels.update({k: service_labels[k] for k in target_labels
                               if k in service_labels})
                groups.append(TargetGroup((f"{address.ip}:{port.port}",), labels))
    return sorted(groups, key=lambda g: g.targets)


def endpoint_addresses(endpoints: Endpoints | None, port_name: str) -> list[str]:
    """``ip:port`` of the ready addresses on the named port (Alertmanagers, federation)."""
    if endpoints is None:
        return []
    found = {f"{a.ip}:{p.port}" for s in endpoints.subsets or () for p in s.ports or ()
             if p.name == port_name for a in s.addresses or ()}
    return sorted(found)
