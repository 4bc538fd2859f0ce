"""``/metrics``: a few of kube-apiserver 1.32's metrics, in Prometheus text format.

k8s.io/apiserver pkg/endpoints/metrics/metrics.go counts every request in
``apiserver_request_total`` by its reported verb (``cleanVerb``: LIST and WATCH for a
collection GET, APPLY for a server-side apply PATCH, CONNECT for the streaming
subresources), dry run, group, version, resource, subresource, scope and code;
``apiserver_storage_objects`` (pkg/storage) is the number of stored objects per resource;
``kubernetes_build_info`` (component-base/metrics/prometheus/version) names the version
``/version`` serves; the components' own (PodSecurity's ``pod_security_*``) follow. The
path is a non-resource URL like any other: RBAC's ``system:monitoring`` role grants it. The
counts are kept in a plain dict (one increment per request) and turned into Prometheus
families only when scraped; ``prometheus_client`` (with ``http.server``, ``wsgiref`` and
``email`` under it) is loaded then, at the first scrape, not by a server's start
(docs/benchmarks.md, Start-up).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from setpoint.cluster.endpoints.http import Request, Response
from setpoint.cluster.endpoints.requestinfo import ResourcePath

if TYPE_CHECKING:
    from prometheus_client.core import Metric


class Collector(Protocol):
    """What a ``prometheus_client`` registry asks of a collector (its families when
    scraped), without loading ``prometheus_client`` to subclass its ``Collector``."""

    def collect(self) -> Iterator[Metric]: ...


class ObjectCounts(Protocol):
    """What the store tells of its contents: its resources and how many objects each has."""

    def resources(self) -> Iterable[str]: ...

    def count(self, resource: str) -> int: ...


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_CONNECT = {"exec", "attach", "portforward", "proxy"}
_REQUEST_LABELS = ("code", "component", "dry_run", "group", "resource", "scope",
                   "subresource", "verb", "version")
_BUILD_LABELS = ("build_date", "compiler", "git_commit", "git_tree_state", "git_version",
                 "go_version", "major", "minor", "platform")


def reported_verb(request: Request, rp: ResourcePath | None) -> str:
    """metrics.go ``cleanVerb`` over the request info's verb."""
    method = request.method.upper()
    if rp is None:
        return method
    if rp.subresource in _CONNECT:
        return "CONNECT"
    if method == "GET":
        if rp.legacy_watch or request.query.get("watch") in ("true", "1"):
            return "WATCH"
        return "GET" if rp.name else "LIST"
    if method == "PATCH" and request.content_type == "application/apply-patch+yaml":
        return "APPLY"
    return method


def _scope(rp: ResourcePath | None) -> str:
    if rp is None:
        return ""
    if rp.name:
        return "resource"
    return "namespace" if rp.namespace else "cluster"


def request_labels(request: Request, rp: ResourcePath | None, code: int) -> tuple[str, ...]:
    """The ``apiserver_request_total`` labels of a request answered with ``code``, in the
    order of ``_REQUEST_LABELS``."""
    dry_run = "All" if request.query.get("dryRun") == "All" else ""
    return (str(code), "apiserver", dry_run, rp.group if rp else "",
            rp.resource if rp else "", _scope(rp), rp.subresource if rp else "",
            reported_verb(request, rp), rp.version if rp else "")


class APIServerMetrics:
    """The request counts, and the store and build facts read when scraped (a
    ``prometheus_client`` collector: ``collect`` is all a registry asks of one)."""

    def __init__(self, object_counts: Callable[[], Iterable[tuple[str, int]]],
                 version: Callable[[], dict[str, str]],
                 components: Iterable[Collector] = ()) -> None:
        self._requests: Counter[tuple[str, ...]] = Counter()
        self._object_counts = object_counts
        self._version = version
        self._components = tuple(components)  # (the admission plugins' own metrics)
        self._registry: Any = None  # a CollectorRegistry, made at the first scrape

    def count(self, labels: tuple[str, ...]) -> None:
        """One more request of these labels (``request_labels``)."""
        self._requests[labels] += 1

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        requests = CounterMetricFamily(
            "apiserver_request",
            "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, "
            "group, version, resource, scope, component, and HTTP response code.",
            labels=_REQUEST_LABELS)
        for key, count in sorted(self._requests.items()):
            requests.add_metric(key, count)
        yield requests
        objects = GaugeMetricFamily(
            "apiserver_storage_objects",
            "[STABLE] Number of stored objects at the time of last check split by kind. In "
            "case of a fetching error, the value will be -1.", labels=("resource",))
        for resource, count in sorted(self._object_counts()):
            objects.add_metric((resource,), count)
        yield objects
        info = self._version()
        build = GaugeMetricFamily(
            "kubernetes_build_info",
            "[ALPHA] A metric with a constant '1' value labeled by major, minor, git "
            "version, git commit, git tree state, build date, Go version, and compiler from "
            "which Kubernetes was built, and platform on which it is running.",
            labels=_BUILD_LABELS)
        build.add_metric((info["buildDate"], info["compiler"], info["gitCommit"],
                          info["gitTreeState"], info["gitVersion"], info["goVersion"],
                          info["major"], info["minor"], info["platform"]), 1)
        yield build

    def answer(self) -> Response:
        from prometheus_client import CollectorRegistry, generate_latest

        if self._registry is None:
            self._registry = CollectorRegistry(auto_describe=False)
            self._registry.register(self)
            for component in self._components:
                self._registry.register(component)
        return Response(generate_latest(self._registry), 200, CONTENT_TYPE)


def storage_object_counts(store: ObjectCounts) -> list[tuple[str, int]]:
    """``apiserver_storage_objects``: stored objects per resource, named ``resource.group``
    (the core group's by the resource alone)."""
    counts = []
    for key in store.resources():
        group, _, resource = key.rpartition("/")
        counts.append((f"{resource}.{group}" if group else resource, store.count(key)))
    return counts
