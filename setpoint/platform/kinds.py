"""The kinds a stack is made of, and how an object is named in a graph.

A one-shot run lists these built-in kinds, the CustomResourceDefinitions, and then every
custom kind the CRDs serve (their storage version). Each is listed once.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from setpoint.client import Kind

CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")

# (apiVersion, kind, namespaced)
BUILTIN_KINDS: tuple[tuple[str, str, bool], ...] = (
    ("v1", "Pod", True),
    ("v1", "Service", True),
    ("v1", "ConfigMap", True),
    ("v1", "Secret", True),
    ("v1", "ServiceAccount", True),
    ("v1", "PersistentVolumeClaim", True),
    ("v1", "PersistentVolume", False),
    ("v1", "Node", False),
    ("apps/v1", "Deployment", True),
    ("apps/v1", "ReplicaSet", True),
    ("apps/v1", "StatefulSet", True),
    ("apps/v1", "DaemonSet", True),
    ("batch/v1", "Job", True),
    ("batch/v1", "CronJob", True),
    ("networking.k8s.io/v1", "NetworkPolicy", True),
    ("networking.k8s.io/v1", "Ingress", True),
    ("policy/v1", "PodDisruptionBudget", True),
    ("storage.k8s.io/v1", "StorageClass", False),
    ("rbac.authorization.k8s.io/v1", "Role", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", False),
)


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class KindInfo(NamedTuple):
    """A kind the graph knows: what to list it by and whether its objects are namespaced."""

    api_version: str
    kind: str
    namespaced: bool

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def ref(self) -> Kind:
        return Kind(self.api_version, self.kind)


def builtin_kinds() -> list[KindInfo]:
    return [KindInfo(*entry) for entry in BUILTIN_KINDS]


def custom_kinds(crds: list[dict[str, Any]]) -> list[KindInfo]:
    """The storage version of each established CRD's kind."""
    out = []
    for crd in crds:
        spec = crd.get("spec") or {}
        versions = [v for v in spec.get("versions") or () if v.get("storage")]
        kind = (spec.get("names") or {}).get("kind")
        if not versions or not kind or not spec.get("group"):
            continue
        out.append(KindInfo(f"{spec['group']}/{versions[0]['name']}", kind,
                            spec.get("scope") != "Cluster"))
    return out


class ObjectRef(NamedTuple):
    """An object in a graph: its group, kind, namespace ("" when cluster-scoped) and name."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group and "." in self.group else self.kind
        if self.namespace:
            return f"{kind}/{self.namespace}/{self.name}"
        return f"{kind}/{self.name}"

    @property
    def store_key(self) -> str:
        """The key the shared cache's store keeps the object under."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name
