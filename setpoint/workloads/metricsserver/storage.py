"""The last PodMetrics and NodeMetrics the kubelets reported, kept in memory.

As metrics-server's storage (kubernetes-sigs/metrics-server pkg/storage/pod.go, node.go):
the latest point of every pod and node, replaced as a whole by each scrape, read by the
API's get and list. Objects are complete ``metrics.k8s.io/v1beta1`` PodMetrics and
NodeMetrics but for ``metadata.creationTimestamp``, which metrics-server sets to the time
of the request (pkg/storage/pod.go ``CreationTimestamp: metav1.NewTime(time.Now())``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["API_VERSION", "MetricsStorage"]

API_VERSION = "metrics.k8s.io/v1beta1"
Obj = dict[str, Any]


class MetricsStorage:
    """PodMetrics by (namespace, name) and NodeMetrics by name."""

    def __init__(self) -> None:
        self._pods: dict[tuple[str, str], Obj] = {}
        self._nodes: dict[str, Obj] = {}
        self._contents: dict[tuple[str, str, str], Any] = {}
        self.before_read: Callable[[], None] = _nothing
        """Called before every read: the kubelets' publisher brings the points up to date
        then, rather than on every change of a pod (reads are rare, changes are not)."""

    def __repr__(self) -> str:
        return f"MetricsStorage(pods={len(self._pods)}, nodes={len(self._nodes)})"

    def store(self, desired: Mapping[tuple[str, str, str], Mapping[str, Any]], *,
              timestamp: str, window: str, refresh: bool = False) -> None:
        """Replace the stored points with ``desired`` (by ``(kind, namespace, name)``: the
        object but for apiVersion, kind, timestamp and window). A point whose content is
        unchanged keeps its timestamp unless ``refresh`` (it was measured again)."""
        pods: dict[tuple[str, str], Obj] = {}
        nodes: dict[str, Obj] = {}
        for key, content in desired.items():
            kind, namespace, name = key
            before = (self._pods.get((namespace, name)) if kind == "PodMetrics"
                      else self._nodes.get(name))
            if before is not None and not refresh and self._contents.get(key) == content:
                obj = before
            else:
                obj = {"apiVersion": API_VERSION, "kind": kind, **content,
                       "timestamp": timestamp, "window": window}
            if kind == "PodMetrics":
                pods[(namespace, name)] = obj
            else:
                nodes[name] = obj
        self._contents = dict(desired)
        self._pods, self._nodes = pods, nodes

    def pod(self, namespace: str, name: str) -> Obj | None:
        self.before_read()
        return self._pods.get((namespace, name))

    def pods(self, namespace: str | None = None) -> list[Obj]:
        """PodMetrics of ``namespace`` (every namespace when None), by namespace and name
        as metrics-server sorts them (pkg/api/pod.go getMetrics)."""
        self.before_read()
        return [self._pods[key] for key in sorted(self._pods)
                if namespace is None or key[0] == namespace]

    def node(self, name: str) -> Obj | None:
        self.before_read()
        return self._nodes.get(name)

    def nodes(self) -> list[Obj]:
        """NodeMetrics by name (pkg/api/node.go getMetrics)."""
        self.before_read()
        return [self._nodes[name] for name in sorted(self._nodes)]


def _nothing() -> None:
    """Nothing to bring up to date: the points are what was last stored."""
