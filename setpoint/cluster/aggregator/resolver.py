"""Where an APIService's backend is: its Service, the Service's port, an Endpoints address.

As kube-apiserver with ``--enable-aggregator-routing`` (k8s.io/apiserver pkg/util/proxy
proxy.go ``ResolveEndpoint``, 1.32): the Service must be ClusterIP, NodePort or
LoadBalancer, its port whose ``port`` is the APIService's ``spec.service.port`` (443 by
default) gives the port name, and the Endpoints subset address with a port of that name is
the backend. The embedded cluster has no service network, so endpoint routing is the only one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Reader

SERVICES, ENDPOINTS = "/services", "/endpoints"
ROUTABLE_TYPES = ("ClusterIP", "LoadBalancer", "NodePort")


class ResolveError(Exception):
    """The backend cannot be found; ``str()`` is the Go error's text."""


@dataclass(frozen=True)
class ServiceRef:
    """An APIService's ``spec.service``, defaulted as the API does (port 443)."""

    namespace: str
    name: str
    port: int

    @property
    def server_name(self) -> str:
        """The name the backend's certificate must carry (handler_proxy.go)."""
        return f"{self.name}.{self.namespace}.svc"


def service_ref(apiservice: Obj) -> ServiceRef | None:
    """The backend an APIService names, or None for a local one."""
    service = (apiservice.get("spec") or {}).get("service")
    if not service:
        return None
    return ServiceRef(str(service.get("namespace") or ""), str(service.get("name") or ""),
                      int(service.get("port") or 443))


def find_service_port(service: Obj, port: int) -> Obj:
    for candidate in (service.get("spec") or {}).get("ports") or []:
        if candidate.get("port") == port:
            return dict(candidate)
    name = service["metadata"]["name"]
    raise ResolveError(f'no service port {port} found for service "{name}"')


def resolve_endpoint(store: Reader, ref: ServiceRef) -> tuple[str, int]:
    """The (address, port) to send the APIService's traffic to, or ResolveError."""
    service = store.get(SERVICES, ref.namespace, ref.name)
    if service is None:
        raise ResolveError(f'service "{ref.name}" not found')
    service_type = (service.get("spec") or {}).get("type") or "ClusterIP"
    if service_type not in ROUTABLE_TYPES:
        raise ResolveError(f'unsupported service type "{service_type}"')
    port_name = find_service_port(service, ref.port).get("name") or ""
    endpoints = store.get(ENDPOINTS, ref.namespace, ref.name)
    if endpoints is None:
        raise ResolveError(f'endpoints "{ref.name}" not found')
    subsets = endpoints.get("subsets") or []
    if not subsets:
        raise ResolveError(f'no endpoints available for service "{ref.name}"')
    seed = random.randrange(len(subsets))  # a random subset first, as proxy.go does
    for i in range(len(subsets)):
        subset = subsets[(seed + i) % len(subsets)]
        addresses = subset.get("addresses") or []
        if not addresses:
            continue
        for port in subset.get("ports") or []:
            if (port.get("name") or "") == port_name:
                address = random.choice(addresses)
                return str(address.get("ip", "")), int(port.get("port", 0))
    raise ResolveError(f'no endpoints available for service "{ref.name}"')


def host_port(address: str, port: int) -> str:
    """Go's ``net.JoinHostPort``."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
