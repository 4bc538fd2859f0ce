"""The ``metrics.k8s.io/v1beta1`` API as metrics-server serves it, over the in-memory
storage: discovery, and get/list of PodMetrics (``pods``, namespaced) and NodeMetrics
(``nodes``).

kubernetes-sigs/metrics-server pkg/api/pod.go and node.go: a list takes the pods (nodes)
the label selector picks, filters them by ``metadata.name``/``metadata.namespace`` field
selectors (pkg/api/filter.go, ``generic.AddObjectMetaFieldsSet``), and answers the metrics
of those that have some, sorted; a get of a pod (node) that does not exist is the lister's
``pods "x" not found``, of one without metrics ``podmetrics.metrics.k8s.io "ns/x" not
found``. pkg/api/table.go converts to a Table for ``Accept: ...;as=Table``. The storage
has no watch: a watch is 405 (k8s.io/apiserver pkg/endpoints/handlers/get.go ListResource).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from setpoint.machinery import fields as field_selectors
from setpoint.machinery import labels as label_selectors
from setpoint.machinery.errors import StatusError, method_not_supported, not_found
from setpoint.machinery.metatime import meta_time
from setpoint.machinery.quantity import Quantity
from setpoint.workloads.metricsserver.authorization import Attributes
from setpoint.workloads.metricsserver.storage import API_VERSION, MetricsStorage

__all__ = ["GROUP", "VERSION", "MetricsAPI", "Route", "route"]

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
Obj = dict[str, Any]

RESOURCES: list[Obj] = [
    {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics",
     "verbs": ["get", "list"]},
    {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics",
     "verbs": ["get", "list"]},
]
_VERSION_ENTRY = {"groupVersion": API_VERSION, "version": VERSION}
API_GROUP: Obj = {"name": GROUP, "versions": [_VERSION_ENTRY],
                  "preferredVersion": _VERSION_ENTRY}


@dataclass(frozen=True)
class Route:
    """A request understood: what to authorize, and what it asks for."""

    attributes: Attributes
    kind: str  # "health", "apis", "group", "resources", "pods", "nodes"
    namespace: str | None = None
    name: str = ""


def route(method: str, path: str, query: Mapping[str, str]) -> Route | None:
    """Parse ``path`` as k8s.io/apiserver's RequestInfoFactory would; None: not served."""
    verb = method.lower()
    if path in ("/healthz", "/readyz", "/livez"):
        return Route(Attributes(verb, path), "health")
    if path in ("/apis", "/apis/"):
        return Route(Attributes(verb, path), "apis")
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2 or parts[0] != "apis" or parts[1] != GROUP:
        return None
    if len(parts) == 2:
        return Route(Attributes(verb, path), "group")
    if parts[2] != VERSION:
        return None
    if len(parts) == 3:
        return Route(Attributes(verb, path), "resources")
    rest = parts[3:]
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 2 or rest[0] not in ("pods", "nodes"):
        return None
    resource = rest[0]
    if resource == "nodes" and namespace is not None:
        return None
    name = rest[1] if len(rest) == 2 else ""
    if method in ("GET", "HEAD"):
        watch = query.get("watch", "").lower() in ("1", "true")
        verb = "get" if name else ("watch" if watch else "list")
    else:  # k8s.io/apiserver pkg/endpoints/request/requestinfo.go's verbs
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}.get(method, verb)
    attrs = Attributes(verb, path, True, GROUP, VERSION, resource, namespace or "", name)
    return Route(attrs, resource, namespace, name)


def _served(obj: Obj, labels: Mapping[str, str]) -> Obj:
    """The object as served: the labels the pod or node has now (metrics-server takes them
    from its lister), and creationTimestamp the time of the request (pkg/storage/pod.go,
    node.go)."""
    metadata = {k: v for k, v in obj["metadata"].items() if k != "labels"}
    if labels:
        metadata["labels"] = dict(labels)
    metadata["creationTimestamp"] = meta_time()
    return {**obj, "metadata": metadata}


Labels = Mapping[str, str]


class MetricsAPI:
    """Answers routed requests from ``storage``. ``pod_labels(ns, name)`` and
    ``node_labels(name)`` are the listers metrics-server selects with: the labels of the
    pod (node) that exists, else None."""

    def __init__(self, storage: MetricsStorage,
                 pod_labels: Callable[[str, str], Labels | None],
                 node_labels: Callable[[str], Labels | None]) -> None:
        self.storage = storage
        self.pod_labels = pod_labels
        self.node_labels = node_labels

    def __repr__(self) -> str:
        return f"MetricsAPI({self.storage!r})"

    def answer(self, request: Route, query: Mapping[str, str]) -> Obj:
        """The body for ``request`` (a GET); raises :class:`StatusError`."""
        kind = request.kind
        if kind == "apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [API_GROUP]}
        if kind == "group":
            return {"kind": "APIGroup", "apiVersion": "v1", **API_GROUP}
        if kind == "resources":
            return {"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": API_VERSION, "resources": RESOURCES}
        if request.attributes.verb == "watch":
            raise method_not_supported(kind, "watch", GROUP)
        if kind == "pods":
            return self._pods(request, query)
        return self._nodes(request, query)

    def _pods(self, request: Route, query: Mapping[str, str]) -> Obj:
        namespace = request.namespace or ""
        if request.name:
            labels = self.pod_labels(namespace, request.name)
            if labels is None:
                raise not_found("pods", request.name)
            found = self.storage.pod(namespace, request.name)
            if found is None:
                raise not_found("podmetrics", f"{namespace}/{request.name}", GROUP)
            return _served(found, labels)
        selector = label_selectors.parse(query.get("labelSelector"))
        fields = field_selectors.parse(query.get("fieldSelector"))
        items = []
        for metrics in self.storage.pods(request.namespace):
            meta = metrics["metadata"]
            labels = self.pod_labels(meta["namespace"], meta["name"])
            if labels is not None and selector.matches(labels) and fields.matches(
                    {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"]}):
                items.append(_served(metrics, labels))
        return {"kind": "PodMetricsList", "apiVersion": API_VERSION, "metadata": {},
                "items": items}

    def _nodes(self, request: Route, query: Mapping[str, str]) -> Obj:
        if request.name:
            labels = self.node_labels(request.name)
            if labels is None:
                raise not_found("nodes", request.name)
            found = self.storage.node(request.name)
            if found is None:
                raise not_found("nodemetrics", request.name, GROUP)
            return _served(found, labels)
        selector = label_selectors.parse(query.get("labelSelector"))
        fields = field_selectors.parse(query.get("fieldSelector"))
        items = []
        for metrics in self.storage.nodes():
            name = metrics["metadata"]["name"]
            labels = self.node_labels(name)
            if labels is not None and selector.matches(labels) \
                    and fields.matches({"metadata.name": name}):
                items.append(_served(metrics, labels))
        return {"kind": "NodeMetricsList", "apiVersion": API_VERSION, "metadata": {},
                "items": items}


def wants_table(accept: str) -> str | None:
    """The Table's group version when ``accept`` asks for one (``application/json;as=Table;
    v=v1;g=meta.k8s.io``), else None."""
    for clause in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in clause.split(";")[1:])
        if params.get("as") == "Table" and params.get("g", "meta.k8s.io") == "meta.k8s.io" \
                and params.get("v", "v1") in ("v1", "v1beta1"):
            return f"meta.k8s.io/{params.get('v', 'v1')}"
    return None


def as_table(body: Obj, api_version: str, include_object: str) -> Obj:
    """pkg/api/table.go's rows (Name, the sorted resource names, Window), with each row's
    object as k8s.io/apiserver's asTable (endpoints/handlers/response.go) includes it
    (``includeObject``: None, an ``object: null``; Metadata by default; Object; any other
    value a 400 once there is a row). The columns and rows are Go's nil slices when there
    is nothing to list: ``null``, as ``metav1.Table`` encodes them."""
    items = body.get("items", [body])
    if include_object not in ("Object", "Metadata", "", "None") and items:
        raise StatusError(400, "BadRequest",
                          f'unrecognized includeObject value: "{include_object}"')
    columns: list[Obj] = []
    rows: list[Obj] = []
    names: list[str] | None = None
    for item in items:
        if item["kind"] in ("PodMetrics",):
            usage: dict[str, Quantity] = {}
            for container in item.get("containers") or ():
                for key, value in (container.get("usage") or {}).items():
                    usage[key] = usage.get(key, Quantity()) + Quantity.parse(str(value))
        else:
            usage = {k: Quantity.parse(str(v)) for k, v in (item.get("usage") or {}).items()}
        if names is None:  # the first item's resources name the columns, as in table.go
            names = sorted(usage)
            columns = [{"name": "Name", "type": "string", "format": "name",
                        "description": "Name of the resource", "priority": 0},
                       *({"name": n, "type": "string", "format": "quantity",
                          "description": "", "priority": 0} for n in names),
                       {"name": "Window", "type": "string", "format": "duration",
                        "description": "", "priority": 0}]
        row: Obj = {"cells": [item["metadata"]["name"],
                              *(str(usage.get(n, Quantity())) for n in names),
                              item.get("window", "")]}
        if include_object == "Object":
            row["object"] = item
        elif include_object == "None":
            row["object"] = None  # a RawExtension without an object
        else:
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": api_version,
                             "metadata": item["metadata"]}
        rows.append(row)
    return {"kind": "Table", "apiVersion": api_version, "metadata": {},
            "columnDefinitions": columns or None, "rows": rows or None}


__all__ += ["StatusError", "as_table", "wants_table"]
