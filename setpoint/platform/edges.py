"""The relations built-in objects state in their own fields.

Each function reads one object and names what it points at; nothing here looks anything
up. Field paths follow the Kubernetes API types (k8s.io/api core/v1 ``types.go``: PodSpec
volumes, env, envFrom, imagePullSecrets, serviceAccountName, nodeName;
networking/v1 IngressSpec; core/v1 PersistentVolumeClaimSpec and PersistentVolumeSpec;
rbac/v1 RoleBinding). Label selectors are read as their controllers read them
(``metav1.LabelSelectorAsSelector``; a Service's map with ``SelectorFromSet``, where an
empty map selects nothing, as the endpoints controller skips such Services).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from setpoint.machinery import labels as label_selectors
from setpoint.platform.kinds import group_of


class Target(NamedTuple):
    """What a field names: group, kind, namespace ("" cluster-scoped), name, and the relation."""

    group: str
    kind: str
    namespace: str
    name: str
    relation: str


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def owner_targets(obj: Mapping[str, Any]) -> Iterator[tuple[Target, str]]:
    """Each ownerReference as (owner, uid); owners share the namespace or are cluster-scoped."""
    namespace = metadata(obj).get("namespace") or ""
    for ref in metadata(obj).get("ownerReferences") or ():
        if not isinstance(ref, Mapping) or not ref.get("name") or not ref.get("kind"):
            continue
        relation = "controller" if ref.get("controller") else "owner"
        yield Target(group_of(str(ref.get("apiVersion", ""))), ref["kind"], namespace,
                     ref["name"], relation), str(ref.get("uid") or "")


# kind -> how its pod selector is written
SELECTOR_KINDS = {
    ("", "Service"): "map",
    ("apps", "Deployment"): "spec.selector",
    ("apps", "ReplicaSet"): "spec.selector",
    ("apps", "StatefulSet"): "spec.selector",
    ("apps", "DaemonSet"): "spec.selector",
    ("batch", "Job"): "spec.selector",
    ("networking.k8s.io", "NetworkPolicy"): "spec.podSelector",
    ("policy", "PodDisruptionBudget"): "spec.selector",
}


def pod_selector(group: str, kind: str, obj: Mapping[str, Any]) -> label_selectors.Selector | None:
    """The pods ``obj`` selects, or None when it selects none (or is not a selecting kind)."""
    how = SELECTOR_KINDS.get((group, kind))
    spec = obj.get("spec") or {}
    if how is None or not isinstance(spec, Mapping):
        return None
    try:
        if how == "map":
            selector = spec.get("selector")
            if not selector:
                return None
            return label_selectors.selector_from_set(selector)
        field = spec.get("podSelector" if how == "spec.podSelector" else "selector")
        if field is None:
            return None
        selected = label_selectors.from_label_selector(field)
    except (ValueError, TypeError, AttributeError):
        return None
    return None if selected.nothing else selected


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _pod_targets(namespace: str, spec: Mapping[str, Any]) -> Iterator[Target]:
    def local(kind: str, name: Any, relation: str) -> Iterator[Target]:
        if (found := _name(name)) is not None:
            yield Target("", kind, namespace, found, relation)

    for volume in _items(spec.get("volumes")):
        yield from local("PersistentVolumeClaim",
                         (volume.get("persistentVolumeClaim") or {}).get("claimName"), "volume")
        yield from local("ConfigMap", (volume.get("configMap") or {}).get("name"), "volume")
        yield from local("Secret", (volume.get("secret") or {}).get("secretName"), "volume")
        for source in _items((volume.get("projected") or {}).get("sources")):
            yield from local("ConfigMap", (source.get("configMap") or {}).get("name"), "volume")
            yield from local("Secret", (source.get("secret") or {}).get("name"), "volume")
    containers = [*_items(spec.get("initContainers")), *_items(spec.get("containers")),
                  *_items(spec.get("ephemeralContainers"))]
    for container in containers:
        for env in _items(container.get("env")):
            source = env.get("valueFrom") or {}
            yield from local("ConfigMap", (source.get("configMapKeyRef") or {}).get("name"), "env")
            yield from local("Secret", (source.get("secretKeyRef") or {}).get("name"), "env")
        for env_from in _items(container.get("envFrom")):
            yield from local("ConfigMap", (env_from.get("configMapRef") or {}).get("name"),
                             "envFrom")
            yield from local("Secret", (env_from.get("secretRef") or {}).get("name"), "envFrom")
    for pull in _items(spec.get("imagePullSecrets")):
        yield from local("Secret", pull.get("name"), "imagePullSecret")
    yield from local("ServiceAccount",
                     spec.get("serviceAccountName") or spec.get("serviceAccount"),
                     "serviceAccount")
    if (node := _name(spec.get("nodeName"))) is not None:
        yield Target("", "Node", "", node, "node")


def _ingress_targets(namespace: str, spec: Mapping[str, Any]) -> Iterator[Target]:
    backends = [spec.get("defaultBackend") or {}]
    for rule in _items(spec.get("rules")):
        backends += [p.get("backend") or {} for p in _items((rule.get("http") or {}).get("paths"))]
    for backend in backends:
        if (service := _name((backend.get("service") or {}).get("name"))) is not None:
            yield Target("", "Service", namespace, service, "backend")
        resource = backend.get("resource") or {}
        if _name(resource.get("kind")) and _name(resource.get("name")):
            yield Target(resource.get("apiGroup") or "", resource["kind"], namespace,
                         resource["name"], "backend")
    for tls in _items(spec.get("tls")):
        if (secret := _name(tls.get("secretName"))) is not None:
            yield Target("", "Secret", namespace, secret, "tls")


def _binding_targets(namespace: str, obj: Mapping[str, Any]) -> Iterator[Target]:
    role = obj.get("roleRef") or {}
    if _name(role.get("name")):
        role_ns = namespace if role.get("kind") == "Role" else ""
        yield Target("rbac.authorization.k8s.io", str(role.get("kind")), role_ns, role["name"],
                     "roleRef")
    for subject in _items(obj.get("subjects")):
        # Users and Groups are not objects; a ServiceAccount may live in any namespace
        if subject.get("kind") == "ServiceAccount" and _name(subject.get("name")):
            yield Target("", "ServiceAccount", subject.get("namespace") or namespace,
                         subject["name"], "subject")


def reference_targets(group: str, kind: str, obj: Mapping[str, Any]) -> list[Target]:
    """Every object ``obj`` names in its spec (or, for bindings and accounts, its body)."""
    namespace = metadata(obj).get("namespace") or ""
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        spec = {}
    out: list[Target] = []
    if (group, kind) == ("", "Pod"):
        out += _pod_targets(namespace, spec)
    elif (group, kind) == ("networking.k8s.io", "Ingress"):
        out += _ingress_targets(namespace, spec)
    elif (group, kind) == ("", "PersistentVolumeClaim"):
        if (volume := _name(spec.get("volumeName"))) is not None:
            out.append(Target("", "PersistentVolume", "", volume, "volumeName"))
        if (sc := _name(spec.get("storageClassName"))) is not None:
            out.append(Target("storage.k8s.io", "StorageClass", "", sc, "storageClass"))
    elif (group, kind) == ("", "PersistentVolume"):
        if (sc := _name(spec.get("storageClassName"))) is not None:
            out.append(Target("storage.k8s.io", "StorageClass", "", sc, "storageClass"))
        claim = spec.get("claimRef") or {}
        if _name(claim.get("name")) and _name(claim.get("namespace")):
            out.append(Target("", "PersistentVolumeClaim", claim["namespace"], claim["name"],
                              "claimRef"))
    elif (group, kind) in (("rbac.authorization.k8s.io", "RoleBinding"),
                           ("rbac.authorization.k8s.io", "ClusterRoleBinding")):
        out += _binding_targets(namespace, obj)
    elif (group, kind) == ("", "ServiceAccount"):
        for secret in [*_items(obj.get("secrets")), *_items(obj.get("imagePullSecrets"))]:
            if (name := _name(secret.get("name"))) is not None:
                out.append(Target("", "Secret", namespace, name, "secret"))
    return out


def field_at(obj: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path (``spec.mySQLServiceName``), or None."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value
