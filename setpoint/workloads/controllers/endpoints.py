"""The Endpoints and EndpointSlice controllers: which pods back each Service.

Ports of ``pkg/controller/endpoint`` and ``pkg/controller/endpointslice``. For every Service
with a selector (not ExternalName), the pods of its namespace that match the selector and
have an IP become endpoints; each service port is resolved against the pod (a numeric
``targetPort`` as it is, a named one through the containers' named ports of that protocol).

- ``Endpoints`` (named after the Service, labelled like it): ready pods in ``addresses``,
  the others in ``notReadyAddresses`` (all in ``addresses`` with
  ``publishNotReadyAddresses``); terminating pods are left out. Deleted with the Service.
- ``EndpointSlices`` (``discovery.k8s.io/v1``, ``addressType: IPv4``, named
  ``<service>-<random>``, owned by the Service, labelled ``kubernetes.io/service-name`` and
  ``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``): one endpoint
  per pod with ``conditions`` ready/serving/terminating, ``nodeName``, ``zone`` (the node's
  ``topology.kubernetes.io/zone``), ``hostname`` and ``targetRef``; endpoints are grouped by
  their resolved port list, at most 100 per slice, kept in the slice they already are in to
  limit churn. A Service without endpoints keeps one empty placeholder slice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from setpoint.client import Kind, NotFoundError
from setpoint.machinery.labels import selector_from_set
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, Manager, Request, Result
from setpoint.runtime._handlers import Handler
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.runtime._ownership import owner_reference
from setpoint.workloads.controllers.podcontrol import is_pod_ready
from setpoint.workloads.settings import WorkloadSettings

SERVICE = Kind("v1", "Service")
POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
ENDPOINTS = Kind("v1", "Endpoints")
ENDPOINT_SLICE = Kind("discovery.k8s.io/v1", "EndpointSlice")

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
LABEL_HEADLESS = "service.kubernetes.io/headless"
LABEL_ZONE = "topology.kubernetes.io/zone"
TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
MAX_ENDPOINTS_CAPACITY = 1000
MAX_ENDPOINTS_PER_SLICE = 100
RESERVED_SLICE_LABELS = (LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS)


# -- what a Service selects -----------------------------------------------------------------

def wants_endpoints(service: Obj) -> bool:
    """Services with a selector, except ExternalName ones, get endpoints from controllers."""
    spec = service.get("spec") or {}
    return spec.get("type") != "ExternalName" and spec.get("selector") is not None


def is_ip_set(service: Obj) -> bool:
    ip = (service.get("spec") or {}).get("clusterIP")
    return bool(ip) and ip != "None"


def pod_ipv4(pod: Obj) -> str:
    status = pod.get("status") or {}
    ips = [p.get("ip", "") for p in status.get("podIPs") or [] if isinstance(p, dict)]
    ips = ips or [status.get("podIP") or ""]
    return next((ip for ip in ips if ip and ":" not in ip), "")


def should_be_in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: not terminal, has an IP, terminating only if asked."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    if not pod_ipv4(pod):
        return False
    return include_terminating or not meta(pod).get("deletionTimestamp")


def should_set_hostname(pod: Obj, service: Obj) -> bool:
    spec = pod.get("spec") or {}
    return bool(spec.get("hostname")) and spec.get("subdomain") == name_of(service) \
        and namespace_of(pod) == namespace_of(service)


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """``FindPort``: the container port a service port targets on this pod, or None."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in containers:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port.get("containerPort") or 0)
    return None


def selected_pods(manager: Manager, service: Obj) -> list[Obj]:
    selector = selector_from_set((service.get("spec") or {}).get("selector") or {})
    return manager.cache.list_raw(POD, namespace=namespace_of(service), labels=selector)


def target_ref(pod: Obj) -> Obj:
    m = meta(pod)
    return {"kind": "Pod", "namespace": m.get("namespace"), "name": m.get("name"),
            "uid": m.get("uid")}


def trigger_time(service: Obj, pods: Iterable[Obj]) -> str:
    """The latest change among the Service and its pods (creation, readiness, deletion):
    what the trigger-time annotation reports."""
    times = [str(meta(service).get("creationTimestamp") or "")]
    for pod in pods:
        m = meta(pod)
        times += [str(m.get("creationTimestamp") or ""), str(m.get("deletionTimestamp") or "")]
        times += [str(c.get("lastTransitionTime") or "")
                  for c in (pod.get("status") or {}).get("conditions") or []
                  if c.get("type") == "Ready"]
    return max(t for t in times if t) if any(times) else ""


def services_selecting(manager: Manager, pod: Obj) -> list[Request]:
    """The Services of the pod's namespace whose selector matches it (old or new labels)."""
    # the namespace's index read directly: each pod event of two controllers asks, and
    # a namespace mostly has no Service (a listing's selectors and sort cost more than
    # the answer)
    services = manager.cache.store_for(SERVICE).by_index("namespace", namespace_of(pod))
    if not services:
        return []
    labels = meta(pod).get("labels") or {}
    out = []
    for svc in services:
        selector = (svc.get("spec") or {}).get("selector")
        if selector and selector_from_set(selector).matches(labels):
            out.append(Request(namespace_of(svc), name_of(svc)))
    out.sort(key=lambda r: r.name)  # the listing's order
    return out


def _pod_ips(pod: Obj) -> list[Any]:
    status = pod.get("status") or {}
    return [ip.get("ip") for ip in status.get("podIPs") or ()] or [status.get("podIP")]


def pod_endpoints_changed(old: Obj, new: Obj) -> tuple[bool, bool]:
    """``podEndpointsChanged`` (k8s.io/endpointslice utils.go): (whether what an endpoint
    shows of the pod changed: its deletion, readiness or IPs; whether its membership may
    have: labels, hostname or subdomain). Name, namespace and uid are immutable, and the
    node is set before the pod has an IP, so its binding changes no endpoint."""
    old_meta, new_meta = meta(old), meta(new)
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    labels_changed = (old_meta.get("labels") or {}) != (new_meta.get("labels") or {}) or \
        old_spec.get("hostname") != new_spec.get("hostname") or \
        old_spec.get("subdomain") != new_spec.get("subdomain")
    pod_changed = old_meta.get("deletionTimestamp") != new_meta.get("deletionTimestamp") or \
        is_pod_ready(old) != is_pod_ready(new) or _pod_ips(old) != _pod_ips(new)
    return pod_changed, labels_changed


class PodServices(Handler):
    """The Services a pod's change concerns (``GetServicesToUpdateOnPodChange``): none when
    nothing an endpoint shows changed, those selecting the new pod, and those that selected
    the old one when its labels changed. A real controller looks up no Service for a pod's
    binding or its other status writes; a lookup per event costs a scan of the namespace's
    Services twice per pod event (two controllers)."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def __repr__(self) -> str:
        return "PodServices()"

    def requests(self, obj: Obj) -> Iterable[Request]:
        return services_selecting(self.manager, obj)

    def update_requests(self, old: Obj, new: Obj) -> Iterable[Request]:
        if meta(old).get("resourceVersion") == meta(new).get("resourceVersion"):
            return ()
        pod_changed, labels_changed = pod_endpoints_changed(old, new)
        if not pod_changed and not labels_changed:
            return ()
        services = set(self.requests(new))
        if labels_changed:
            # determineNeededServiceUpdates: with the pod itself unchanged, only the
            # Services it joined or left
            before = set(self.requests(old))
            services = services | before if pod_changed else services ^ before
        return services


# -- Endpoints --------------------------------------------------------------------------------

def desired_subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The Endpoints subsets for ``pods``, repacked: one subset per distinct port list."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    ports = spec.get("ports") or []
    groups: dict[tuple[Any, ...], tuple[list[Obj], list[Obj], list[Obj]]] = {}
    for pod in pods:
        if not should_be_in_endpoints(pod, publish):
            continue
        address: Obj = {"ip": pod_ipv4(pod)}
        if should_set_hostname(pod, service):
            address["hostname"] = pod["spec"]["hostname"]
        if (pod.get("spec") or {}).get("nodeName"):
            address["nodeName"] = pod["spec"]["nodeName"]
        address["targetRef"] = target_ref(pod)
        ready = publish or is_pod_ready(pod)
        entries: list[list[Obj]] = []
        if not ports and spec.get("clusterIP") == "None":
            entries.append([])
        for sp in ports:
            number = find_port(pod, sp)
            if number is None:
                continue
            port: Obj = {"name": sp.get("name") or None, "port": number,
                         "protocol": sp.get("protocol") or "TCP",
                         "appProtocol": sp.get("appProtocol")}
            entries.append([{k: v for k, v in port.items() if v is not None}])
        # RepackSubsets merges single-port subsets into one subset per port set per address
        for entry in _merge_ports(entries):
            key = tuple(sorted((p.get("name", ""), p["port"], p["protocol"]) for p in entry))
            group = groups.setdefault(key, ([], [], entry))
            group[0 if ready else 1].append(address)
    subsets = []
    for _key, (ready_addrs, not_ready, port_list) in sorted(groups.items()):
        subset: Obj = {}
        if ready_addrs:
            subset["addresses"] = _sorted_addresses(ready_addrs)
        if not_ready:
            subset["notReadyAddresses"] = _sorted_addresses(not_ready)
        if port_list:
            subset["ports"] = sorted(port_list, key=lambda p: (p.get("name", ""), p["port"]))
        subsets.append(subset)
    return subsets


def _merge_ports(entries: list[list[Obj]]) -> list[list[Obj]]:
    """All ports of one address form one port set (as RepackSubsets groups them)."""
    if not entries:
        return []
    merged: list[Obj] = []
    for entry in entries:
        merged.extend(p for p in entry if p not in merged)
    return [merged]


def _sorted_addresses(addresses: list[Obj]) -> list[Obj]:
    return sorted(addresses, key=lambda a: (a["ip"], a["targetRef"].get("uid") or ""))


def truncate(subsets: list[Obj]) -> bool:
    """Keep at most 1000 addresses, ready ones first (``truncateEndpoints``)."""
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= MAX_ENDPOINTS_CAPACITY:
        return False
    truncate_ready = ready > MAX_ENDPOINTS_CAPACITY
    limit = MAX_ENDPOINTS_CAPACITY if truncate_ready else MAX_ENDPOINTS_CAPACITY - ready
    total = ready if truncate_ready else not_ready
    room = limit
    field = "addresses" if truncate_ready else "notReadyAddresses"
    for subset in subsets:
        items = subset.get(field) or []
        share = min(-(-len(items) * limit // total), room)
        subset[field] = items[:share]
        room -= len(subset[field])
        if truncate_ready:
            subset.pop("notReadyAddresses", None)
    return True


class EndpointsReconciler:
    """Keeps the Endpoints of each Service equal to its selected pods."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def __repr__(self) -> str:
        return "EndpointsReconciler()"

    async def reconcile(self, request: Request) -> Result:
        cache = self.manager.cache
        service = cache.store_for(SERVICE).get(f"{request.namespace}/{request.name}")
        client = self.manager.client
        if service is None:
            if cache.get(ENDPOINTS, request.name, request.namespace) is not None:
                with contextlib.suppress(NotFoundError):
                    await client.delete(ENDPOINTS, request.name, namespace=request.namespace)
            return Result()
        if not wants_endpoints(service):
            return Result()
        pods = selected_pods(self.manager, service)
        subsets = desired_subsets(service, pods)
        truncated = truncate(subsets)
        labels = dict(meta(service).get("labels") or {})
        if not is_ip_set(service):
            labels[LABEL_HEADLESS] = ""
        current = cache.get(ENDPOINTS, request.name, request.namespace)
        if current is not None:
            current_labels = dict(meta(current).get("labels") or {})
            same = (current.get("subsets") or []) == subsets and current_labels == labels \
                and (OVER_CAPACITY in (meta(current).get("annotations") or {})) == truncated
            if same:
                return Result()
        body: Obj = clone(current) if current is not None else {
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": request.name, "namespace": request.namespace}}
        m = body["metadata"]
        m["labels"] = labels
        annotations = dict(m.get("annotations") or {})
        changed_at = trigger_time(service, pods)
        if changed_at:
            annotations[TRIGGER_TIME] = changed_at
        if truncated:
            annotations[OVER_CAPACITY] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY, None)
        m["annotations"] = annotations
        if subsets:
            body["subsets"] = subsets
        else:
            body.pop("subsets", None)
        writer = self.manager.writer
        if current is None:
            writer.record(await client.create(body, namespace=request.namespace))
        else:
            writer.record(await client.update(body, namespace=request.namespace))
        return Result()


# -- EndpointSlices ---------------------------------------------------------------------------

def slice_endpoint(pod: Obj, service: Obj, nodes: dict[str, Obj]) -> Obj:
    """``podToEndpoint`` for IPv4."""
    serving = is_pod_ready(pod)
    terminating = bool(meta(pod).get("deletionTimestamp"))
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoint: Obj = {"addresses": [pod_ipv4(pod)],
                     "conditions": {"ready": publish or (serving and not terminating),
                                    "serving": serving, "terminating": terminating}}
    spec = pod.get("spec") or {}
    if should_set_hostname(pod, service):
        endpoint["hostname"] = spec["hostname"]
    endpoint["targetRef"] = target_ref(pod)
    node_name = spec.get("nodeName")
    if node_name:
        endpoint["nodeName"] = node_name
        zone = (meta(nodes.get(node_name) or {}).get("labels") or {}).get(LABEL_ZONE)
        if zone:
            endpoint["zone"] = zone
    return endpoint


def slice_ports(pod: Obj, service: Obj) -> list[Obj]:
    """``getEndpointPorts``: the service ports resolved on this pod."""
    spec = service.get("spec") or {}
    out = []
    for sp in spec.get("ports") or []:
        number = find_port(pod, sp)
        if number is None:
            continue
        port: Obj = {"name": sp.get("name") or "", "protocol": sp.get("protocol") or "TCP",
                     "port": number}
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        out.append(port)
    return out


def _ports_key(ports: list[Obj]) -> tuple[Any, ...]:
    return tuple(sorted((p.get("name", ""), p.get("protocol", ""), p.get("port", 0),
                         p.get("appProtocol", "")) for p in ports))


def _endpoint_key(endpoint: Obj) -> str:
    return str((endpoint.get("targetRef") or {}).get("uid") or endpoint["addresses"][0])


class EndpointSliceReconciler:
    """Keeps the EndpointSlices of each Service equal to its selected pods."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def __repr__(self) -> str:
        return "EndpointSliceReconciler()"

    def _slices(self, service: Obj) -> list[Obj]:
        uid = meta(service).get("uid")
        return [s for s in self.manager.cache.list_raw(
                    ENDPOINT_SLICE, namespace=namespace_of(service),
                    labels={LABEL_SERVICE_NAME: name_of(service), LABEL_MANAGED_BY: MANAGED_BY})
                if any(r.get("uid") == uid for r in meta(s).get("ownerReferences") or [])]

    def _labels(self, service: Obj) -> dict[str, str]:
        labels = {k: v for k, v in (meta(service).get("labels") or {}).items()
                  if k not in RESERVED_SLICE_LABELS}
        if not is_ip_set(service):
            labels[LABEL_HEADLESS] = ""
        labels[LABEL_SERVICE_NAME] = name_of(service)
        labels[LABEL_MANAGED_BY] = MANAGED_BY
        return labels

    async def reconcile(self, request: Request) -> Result:
        service = self.manager.cache.store_for(SERVICE).get(
            f"{request.namespace}/{request.name}")
        if service is None or not wants_endpoints(service):
            # slices of a deleted Service go with it (garbage collection of owned objects)
            return Result()
        nodes = {name_of(n): n for n in self.manager.cache.list_raw(NODE)}
        pods = selected_pods(self.manager, service)
        desired: dict[tuple[Any, ...], tuple[list[Obj], dict[str, Obj]]] = {}
        for pod in pods:
            if not should_be_in_endpoints(pod, True):
                continue
            ports = slice_ports(pod, service)
            entry = desired.setdefault(_ports_key(ports), (ports, {}))
            endpoint = slice_endpoint(pod, service, nodes)
            entry[1][_endpoint_key(endpoint)] = endpoint
        await self._sync(service, desired, trigger_time(service, pods))
        return Result()

    async def _sync(self, service: Obj, desired: dict[tuple[Any, ...], tuple[list[Obj],
                    dict[str, Obj]]], changed_at: str) -> None:
        existing = self._slices(service)
        labels = self._labels(service)
        keep: list[tuple[Obj, list[Obj], list[Obj]]] = []  # (slice, ports, endpoints)
        leftover: list[Obj] = []
        by_key: dict[tuple[Any, ...], list[Obj]] = {}
        for s in existing:
            by_key.setdefault(_ports_key(s.get("ports") or []), []).append(s)
        for key, (ports, endpoints) in desired.items():
            placed: set[str] = set()
            slices = by_key.pop(key, [])
            for s in slices:
                kept = [endpoints[k] for k in (_endpoint_key(e) for e in s.get("endpoints") or [])
                        if k in endpoints and k not in placed]
                placed.update(_endpoint_key(e) for e in kept)
                keep.append((s, ports, kept))
            pending = [e for k, e in sorted(endpoints.items()) if k not in placed]
            for entry in sorted((k for k in keep if k[1] is ports),
                                key=lambda k: -len(k[2])):
                room = MAX_ENDPOINTS_PER_SLICE - len(entry[2])
                entry[2].extend(pending[:room])
                pending = pending[room:]
            while pending:
                keep.append(({}, ports, pending[:MAX_ENDPOINTS_PER_SLICE]))
                pending = pending[MAX_ENDPOINTS_PER_SLICE:]
        for slices in by_key.values():
            leftover.extend(slices)
        writes = [k for k in keep if k[2]]
        empties = [k[0] for k in keep if not k[2] and k[0]] + leftover
        if not writes:
            # a Service with no endpoints keeps one placeholder slice
            placeholder = next((s for s in empties if not s.get("endpoints")
                                and not s.get("ports")), None)
            if placeholder is None and empties:
                placeholder = empties[0]
            writes = [(placeholder or {}, [], [])]
            empties = [s for s in empties if s is not placeholder]
        for slice_, slice_ports, slice_endpoints in writes:
            await self._write(service, slice_, labels, slice_ports, slice_endpoints, changed_at)
        for slice_ in empties:
            with contextlib.suppress(NotFoundError):
                await self.manager.client.delete(ENDPOINT_SLICE, name_of(slice_),
                                                  namespace=namespace_of(slice_))

    async def _write(self, service: Obj, current: Obj, labels: dict[str, str],
                     ports: list[Obj], endpoints: list[Obj], changed_at: str) -> None:
        endpoints = sorted(endpoints, key=lambda e: ((e.get("targetRef") or {}).get("name", ""),
                                                     e["addresses"][0]))
        client = self.manager.client
        if current:
            if (current.get("endpoints") or []) == endpoints \
                    and (current.get("ports") or []) == ports \
                    and (meta(current).get("labels") or {}) == labels:
                return
            body = clone(current)
            body["metadata"]["labels"] = labels
            body["endpoints"] = endpoints
            if ports:
                body["ports"] = ports
            else:
                body.pop("ports", None)
            if changed_at:
                body["metadata"].setdefault("annotations", {})[TRIGGER_TIME] = changed_at
            self.manager.writer.record(await client.update(body,
                                                           namespace=namespace_of(service)))
            return
        body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"generateName": f"{name_of(service)}-",
                             "namespace": namespace_of(service), "labels": labels,
                             "ownerReferences": [owner_reference(service)]},
                "addressType": "IPv4", "endpoints": endpoints}
        if ports:
            body["ports"] = ports
        if changed_at:
            body["metadata"]["annotations"] = {TRIGGER_TIME: changed_at}
        self.manager.writer.record(await client.create(body, namespace=namespace_of(service)))


# -- wiring -----------------------------------------------------------------------------------

def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the Endpoints and EndpointSlice controllers."""

    pods_to_services = PodServices(manager)

    def slice_to_service(obj: Obj) -> list[Request]:
        name = (meta(obj).get("labels") or {}).get(LABEL_SERVICE_NAME)
        return [Request(namespace_of(obj), name)] if name else []

    endpoints = (Controller.for_(SERVICE, name="endpoint")
                 .watches(POD, handler=pods_to_services)
                 .watches(ENDPOINTS, map_func=lambda e: [Request(namespace_of(e), name_of(e))])
                 .reconciler(EndpointsReconciler(manager)))
    slices = (Controller.for_(SERVICE, name="endpointslice")
              .watches(POD, handler=pods_to_services)
              .watches(ENDPOINT_SLICE, map_func=slice_to_service)
              .reads(NODE)
              .reconciler(EndpointSliceReconciler(manager)))
    manager.add(endpoints)
    manager.add(slices)
