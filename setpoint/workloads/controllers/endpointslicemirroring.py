"""The EndpointSlice mirroring controller: hand-written Endpoints become EndpointSlices.

A port of kube-controller-manager's ``pkg/controller/endpointslicemirroring``
(endpointslicemirroring_controller.go ``syncEndpoints``, reconciler.go, utils.go). A Service
without a selector gets no EndpointSlices from the EndpointSlice controller; when someone
writes its Endpoints by hand, this controller mirrors them, so that every EndpointSlice
reader (kube-proxy, cluster DNS, the process runtime's service proxy) sees them:

- only while the Service exists with no selector, and the Endpoints carry neither the
  ``endpointslice.kubernetes.io/skip-mirror: "true"`` label nor a leader-election record
  annotation; otherwise the mirrored slices are deleted;
- one slice per address type and port list (``generateName: <endpoints>-``), owned by the
  Endpoints (a controller reference), labelled like them plus ``kubernetes.io/service-name``
  and ``endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io``,
  annotated like them but for the trigger time and ``last-applied-configuration``;
- ``addresses`` ready, ``notReadyAddresses`` not ready (only the ``ready`` condition), at
  most 1000 addresses of a subset mirrored (``--mirroring-max-endpoints-per-subset``).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from setpoint.client import NotFoundError
from setpoint.machinery.netutils import is_ipv4, parse_ip_sloppy
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, Manager, Request, Result
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.runtime._ownership import owner_reference
from setpoint.workloads.controllers.endpoints import (
    ENDPOINT_SLICE,
    ENDPOINTS,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    SERVICE,
    TRIGGER_TIME,
)
from setpoint.workloads.settings import WorkloadSettings

MANAGED_BY = "endpointslicemirroring-controller.k8s.io"
LABEL_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
LEADER_ELECTION = "control-plane.alpha.kubernetes.io/leader"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_ENDPOINTS_PER_SUBSET = 1000


def should_mirror(endpoints: Obj | None, service: Obj | None) -> bool:
    """``syncEndpoints``: a selectorless Service's Endpoints, not opted out of mirroring."""
    if endpoints is None or service is None:
        return False
    if (service.get("spec") or {}).get("selector") is not None:
        return False
    m = meta(endpoints)
    if (m.get("labels") or {}).get(LABEL_SKIP_MIRROR) == "true":
        return False
    return LEADER_ELECTION not in (m.get("annotations") or {})


def address_to_endpoint(address: Obj, ready: bool) -> tuple[Obj, str] | None:
    """``addressToEndpoint`` and ``getAddressType`` (pkg/controller/endpointslicemirroring
    utils.go): the IP copied as written; its family by ``netutils.ParseIPSloppy`` and
    ``ip.To4()``, so ``010.0.0.1`` is an IPv4 address (mirrored as ``010.0.0.1``) and so is
    ``::ffff:192.0.2.1``; None for what that parse rejects (the address is skipped)."""
    text = str(address.get("ip") or "")
    ip = parse_ip_sloppy(text)
    if ip is None:
        return None
    endpoint: Obj = {"addresses": [text], "conditions": {"ready": ready}}
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    if address.get("nodeName"):
        endpoint["nodeName"] = address["nodeName"]
    if address.get("targetRef"):
        endpoint["targetRef"] = address["targetRef"]
    return endpoint, "IPv4" if is_ipv4(ip) else "IPv6"


def slice_ports(subset: Obj) -> list[Obj]:
    """``epPortsToEpsPorts``: every port with its (possibly empty) name and protocol."""
    out = []
    for port in subset.get("ports") or []:
        p: Obj = {"name": port.get("name") or "", "port": port.get("port"),
                  "protocol": port.get("protocol") or "TCP"}
        if port.get("appProtocol"):
            p["appProtocol"] = port["appProtocol"]
        out.append(p)
    return out


def _key(address_type: str, ports: list[Obj]) -> tuple[Any, ...]:
    return (address_type, tuple(sorted((p["name"], p["protocol"], p["port"],
                                        p.get("appProtocol", "")) for p in ports)))


def desired_slices(endpoints: Obj) -> dict[tuple[Any, ...], tuple[str, list[Obj], list[Obj]]]:
    """The endpoints of each (address type, ports) group, ready ones of a subset first."""
    out: dict[tuple[Any, ...], tuple[str, list[Obj], list[Obj]]] = {}
    for subset in endpoints.get("subsets") or []:
        ports = slice_ports(subset)
        added = 0
        seen: set[str] = set()
        for addresses, ready in ((subset.get("addresses"), True),
                                 (subset.get("notReadyAddresses"), False)):
            for address in addresses or []:
                if added >= MAX_ENDPOINTS_PER_SUBSET:
                    break
                converted = address_to_endpoint(address, ready)
                if converted is None:
                    continue
                endpoint, address_type = converted
                group = out.setdefault(_key(address_type, ports), (address_type, ports, []))
                identity = json.dumps(endpoint, sort_keys=True)
                if identity not in seen:
                    seen.add(identity)
                    group[2].append(endpoint)
                    added += 1
    return out


def slice_metadata(endpoints: Obj) -> tuple[dict[str, str], dict[str, str]]:
    """``newEndpointSlice``: the Endpoints' labels and annotations, with the slice's own."""
    m = meta(endpoints)
    labels = dict(m.get("labels") or {})
    labels[LABEL_SERVICE_NAME] = name_of(endpoints)
    labels[LABEL_MANAGED_BY] = MANAGED_BY
    annotations = {k: v for k, v in (m.get("annotations") or {}).items()
                   if k not in (TRIGGER_TIME, LAST_APPLIED)}
    return labels, annotations


class EndpointSliceMirroringReconciler:
    """Keeps the mirrored EndpointSlices of each Endpoints object equal to it."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def __repr__(self) -> str:
        return "EndpointSliceMirroringReconciler()"

    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        endpoints = self.manager.cache.store_for(ENDPOINTS).get(key)
        service = self.manager.cache.store_for(SERVICE).get(key)
        existing = self.manager.cache.list_raw(
            ENDPOINT_SLICE, namespace=request.namespace,
            labels={LABEL_SERVICE_NAME: request.name, LABEL_MANAGED_BY: MANAGED_BY})
        desired = desired_slices(endpoints) if endpoints is not None \
            and should_mirror(endpoints, service) else {}
        assert endpoints is not None or not desired
        by_key: dict[tuple[Any, ...], list[Obj]] = {}
        for s in existing:
            ports = [{"name": p.get("name") or "", "port": p.get("port"),
                      "protocol": p.get("protocol") or "TCP",
                      **({"appProtocol": p["appProtocol"]} if p.get("appProtocol") else {})}
                     for p in s.get("ports") or []]
            by_key.setdefault(_key(str(s.get("addressType")), ports), []).append(s)
        for group_key, (address_type, ports, group) in desired.items():
            assert endpoints is not None
            current = by_key.get(group_key) or []
            await self._write(endpoints, current.pop(0) if current else {}, address_type,
                              ports, group)
        for slices in by_key.values():
            for s in slices:
                with contextlib.suppress(NotFoundError):
                    await self.manager.client.delete(ENDPOINT_SLICE, name_of(s),
                                                      namespace=namespace_of(s))
        return Result()

    async def _write(self, endpoints: Obj, current: Obj, address_type: str,
                     ports: list[Obj], group: list[Obj]) -> None:
        labels, annotations = slice_metadata(endpoints)
        client = self.manager.client
        if current:
            m = meta(current)
            if (current.get("endpoints") or []) == group \
                    and (current.get("ports") or []) == ports \
                    and (m.get("labels") or {}) == labels \
                    and (m.get("annotations") or {}) == annotations:
                return
            updated = clone(current)
            updated["metadata"]["labels"] = labels
            updated["metadata"]["annotations"] = annotations
            updated["endpoints"] = group
            updated["ports"] = ports
            self.manager.writer.record(await client.update(updated,
                                                           namespace=namespace_of(endpoints)))
            return
        body: Obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                     "metadata": {"generateName": f"{name_of(endpoints)}-",
                                  "namespace": namespace_of(endpoints), "labels": labels,
                                  "ownerReferences": [owner_reference(endpoints)]},
                     "addressType": address_type, "endpoints": group, "ports": ports}
        if annotations:
            body["metadata"]["annotations"] = annotations
        self.manager.writer.record(await client.create(body, namespace=namespace_of(endpoints)))


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the EndpointSlice mirroring controller."""

    def slice_to_endpoints(obj: Obj) -> list[Request]:
        labels = meta(obj).get("labels") or {}
        name = labels.get(LABEL_SERVICE_NAME)
        return [Request(namespace_of(obj), name)] \
            if name and labels.get(LABEL_MANAGED_BY) == MANAGED_BY else []

    manager.add(Controller.for_(ENDPOINTS, name="endpointslice-mirroring")
                .watches(SERVICE, map_func=lambda s: [Request(namespace_of(s), name_of(s))])
                .watches(ENDPOINT_SLICE, map_func=slice_to_endpoints)
                .reconciler(EndpointSliceMirroringReconciler(manager)))
