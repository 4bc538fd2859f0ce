"""The shared cache's extra indexes a graph query reads, so that it never scans a kind.

Each is an index function registered on a :class:`~setpoint.runtime.Store` (the informers
keep it current on every event). Functions are module-level (or memoised per name) so
that registering the same index twice on one store is allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from setpoint.platform.edges import Target, field_at, metadata, pod_selector, reference_targets
from setpoint.platform.kinds import group_of

LABELS = "platform.labels"
SELECTOR = "platform.selector"
REFERENCES = "platform.references"
ANY_NAMESPACE = "*"

IndexFunc = Callable[[Any], Iterable[str]]


def label_value(namespace: str, key: str, value: str) -> str:
    return f"{namespace}/{key}={value}"


def index_labels(obj: Any) -> Iterable[str]:
    """Every label as ``namespace/key=value`` and ``*/key=value`` (for cluster-wide lookups)."""
    namespace = metadata(obj).get("namespace") or ""
    out = []
    for key, value in (metadata(obj).get("labels") or {}).items():
        out.append(label_value(namespace, key, value))
        out.append(label_value(ANY_NAMESPACE, key, value))
    return out


def _group_kind(obj: Any) -> tuple[str, str]:
    return group_of(str(obj.get("apiVersion", ""))), str(obj.get("kind", ""))


def index_selector(obj: Any) -> Iterable[str]:
    """One label every pod the object selects must carry (``namespace/key=value``), or
    ``namespace/*`` when its selector pins no label; nothing when it selects no pod."""
    selector = pod_selector(*_group_kind(obj), obj)
    if selector is None:
        return ()
    namespace = metadata(obj).get("namespace") or ""
    for requirement in selector.requirements:
        value = selector.requires_exact_match(requirement.key)
        if value is not None:
            return (label_value(namespace, requirement.key, value),)
    return (f"{namespace}/{ANY_NAMESPACE}",)


def target_key(group: str, kind: str, namespace: str, name: str) -> str:
    return f"{group}/{kind}/{namespace}/{name}"


def index_references(obj: Any) -> Iterable[str]:
    return [target_key(t.group, t.kind, t.namespace, t.name)
            for t in reference_targets(*_group_kind(obj), obj)]


def key_of_target(target: Target) -> str:
    return target_key(target.group, target.kind, target.namespace, target.name)


_ANNOTATION_INDEXES: dict[str, IndexFunc] = {}
_PATH_INDEXES: dict[str, IndexFunc] = {}


def annotation_index(key: str) -> tuple[str, IndexFunc]:
    """The index of annotation ``key``: its whole value and each comma-separated element."""
    func = _ANNOTATION_INDEXES.get(key)
    if func is None:
        def func(obj: Any) -> Iterable[str]:
            value = (metadata(obj).get("annotations") or {}).get(key)
            if not isinstance(value, str):
                return ()
            return {value, *(part.strip() for part in value.split(","))}
        _ANNOTATION_INDEXES[key] = func
    return f"platform.annotation:{key}", func


def path_index(path: str) -> tuple[str, IndexFunc]:
    """The index of the string at field ``path`` (an instance's ``spec.mySQLServiceName``)."""
    func = _PATH_INDEXES.get(path)
    if func is None:
        def func(obj: Any) -> Iterable[str]:
            value = field_at(obj, path)
            return (value,) if isinstance(value, str) and value else ()
        _PATH_INDEXES[path] = func
    return f"platform.path:{path}", func
