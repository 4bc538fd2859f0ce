"""The relationship graph of an application stack, read from a shared cache.

:class:`StackGraph` answers "what belongs to the stack of this object" from a
:class:`setpoint.runtime.Cache` that informers (or a one-shot list, ``snapshot.py``) fill:
it makes no API call. Every lookup goes through an index of the cache, so a query costs
what the stack holds, not what the cluster holds.

Edges, each labelled with its relation:

- ``controller``/``owner``: every ownerReference, owner to dependent;
- ``selector``: Service, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
  NetworkPolicy, PodDisruptionBudget to the Pods their label selector matches;
- references in fields (``edges.py``): Pod to PVC, ConfigMap, Secret, ServiceAccount, Node;
  Ingress to Service and TLS Secret; PVC to PV to StorageClass; bindings to roles and
  ServiceAccount subjects (in any namespace);
- KubePlus's CRD annotations (``setpoint.resources.relationships``): ``annotation:<key>``,
  ``label:<key>`` or ``label-selector:<path>``, ``specproperty:<path>``, from the instance
  to the related object; matching is exact (the whole value, the named key).

The walk from the root follows every edge out of a namespaced object, and into it the
edges that make an object part of the same stack: selectors that select one of its Pods
and CRD relationships that name it. The root's owners are shown (upward only), and the
objects that reference the root by a field. Cluster-scoped objects reached on the way (a
Node, a StorageClass, a ClusterIssuer) are shared by many stacks: they end the walk, except
along the fields they reference (a PV's StorageClass).
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from setpoint.client import ResourceInfo
from setpoint.machinery import labels as label_selectors
from setpoint.platform import indexes
from setpoint.platform.edges import (
    SELECTOR_KINDS,
    field_at,
    metadata,
    owner_targets,
    pod_selector,
    reference_targets,
)
from setpoint.platform.kinds import BUILTIN_KINDS, ObjectRef, custom_kinds, group_of
from setpoint.platform.resourcenames import resources_for
from setpoint.resources.relationships import USAGE as USAGE_ANNOTATION
from setpoint.resources.relationships import (
    AnnotationRelationship,
    LabelRelationship,
    Relationship,
    RelationshipSyntaxError,
    SpecPropertyRelationship,
    parse_relationships,
)
from setpoint.runtime import Cache, Store

Obj = Mapping[str, Any]
GroupKind = tuple[str, str]

FULL, ANCESTOR, SHARED = "full", "ancestor", "shared"


class Edge(NamedTuple):
    source: ObjectRef
    target: ObjectRef
    relation: str


@dataclass
class Stack:
    """The objects of one stack and the edges between them."""

    root: ObjectRef
    objects: dict[ObjectRef, Obj] = field(default_factory=dict)
    edges: set[Edge] = field(default_factory=set)
    usage: dict[ObjectRef, str] = field(default_factory=dict)
    """``resource/usage`` of the custom kinds in the stack: the ConfigMap documenting it."""

    def sorted_edges(self) -> list[Edge]:
        return sorted(self.edges, key=lambda e: (str(e.source), e.relation, str(e.target)))


class NotFound(LookupError):
    """The root object is not in the cache."""


class _CustomKinds(NamedTuple):
    relationships: dict[GroupKind, list[Relationship]]
    by_target_kind: dict[str, list[tuple[GroupKind, Relationship]]]
    usage: dict[GroupKind, str]
    plurals: dict[str, GroupKind]
    namespaced: dict[GroupKind, bool]


class StackGraph:
    """Stack queries over a cache; cheap to make, reusable across queries."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._indexed: dict[int, set[str]] = {}
        self._stores: dict[GroupKind, Store] = {}
        self._by_kind: dict[str, list[GroupKind]] = {}
        self._namespaced: dict[GroupKind, bool] = {
            (group_of(v), k): n for v, k, n in BUILTIN_KINDS}
        self._custom = _CustomKinds({}, {}, {}, {}, {})
        self._crd_signature: tuple[tuple[str, str], ...] | None = None

    # -- the cache's kinds and indexes -----------------------------------------------------

    def _refresh(self) -> None:
        for kind_key in self.cache.kinds:
            gk = (group_of(kind_key.api_version), kind_key.kind)
            if gk not in self._stores:
                self._stores[gk] = self.cache.store_for(kind_key)
                self._by_kind.setdefault(gk[1], []).append(gk)
        crds = self._stores.get(("apiextensions.k8s.io", "CustomResourceDefinition"))
        signature = tuple(sorted(
            (metadata(c).get("name", ""), metadata(c).get("resourceVersion", ""))
            for c in crds)) if crds is not None else ()
        if signature != self._crd_signature:
            self._crd_signature = signature
            self._custom = _read_crds(list(crds) if crds is not None else [])
            self._namespaced.update(self._custom.namespaced)
        self._index(("", "Pod"), indexes.LABELS, indexes.index_labels)
        for gk in SELECTOR_KINDS:
            self._index(gk, indexes.SELECTOR, indexes.index_selector)
        for gk in (("", "Pod"), ("networking.k8s.io", "Ingress"), ("", "PersistentVolumeClaim"),
                   ("", "PersistentVolume"), ("", "ServiceAccount"),
                   ("rbac.authorization.k8s.io", "RoleBinding"),
                   ("rbac.authorization.k8s.io", "ClusterRoleBinding")):
            self._index(gk, indexes.REFERENCES, indexes.index_references)
        for instance, rels in self._custom.relationships.items():
            for rel in rels:
                self._index_relationship(instance, rel)

    def _index(self, gk: GroupKind, name: str, func: indexes.IndexFunc) -> None:
        store = self._stores.get(gk)
        if store is None:
            return
        done = self._indexed.setdefault(id(store), set())
        if name not in done:
            store.add_indexer(name, func)
            done.add(name)

    def _index_relationship(self, instance: GroupKind, rel: Relationship) -> None:
        if isinstance(rel, SpecPropertyRelationship):
            self._index(instance, *indexes.path_index(rel.on))
            for gk in self._by_kind.get(rel.kind, ()):
                if rel.field != "metadata.name":
                    self._index(gk, *indexes.path_index(rel.field))
            return
        if rel.value != "metadata.name":
            self._index(instance, *indexes.path_index(rel.value))
        for gk in self._by_kind.get(rel.on, ()):
            if isinstance(rel, AnnotationRelationship):
                self._index(gk, *indexes.annotation_index(rel.key))
            else:
                self._index(gk, indexes.LABELS, indexes.index_labels)

    def _is_namespaced(self, gk: GroupKind) -> bool:
        return self._namespaced.get(gk, True)

    def _ref(self, gk: GroupKind, obj: Obj) -> ObjectRef:
        return ObjectRef(gk[0], gk[1], metadata(obj).get("namespace") or "",
                         metadata(obj).get("name") or "")

    def _lookup(self, gk: GroupKind, namespace: str, name: str) -> tuple[ObjectRef, Obj] | None:
        store = self._stores.get(gk)
        if store is None:
            return None
        namespace = namespace if self._is_namespaced(gk) else ""
        ref = ObjectRef(gk[0], gk[1], namespace, name)
        obj = store.get(ref.store_key)
        return None if obj is None else (ref, obj)

    def objects(self) -> Iterator[tuple[ObjectRef, Obj]]:
        """Every object the cache holds, with its reference."""
        self._refresh()
        for gk, store in list(self._stores.items()):
            for obj in store:
                yield self._ref(gk, obj), obj

    # -- resolving what the user typed -------------------------------------------------------

    def resolve(self, kind: str, name: str, namespace: str = "default",
                served: Sequence[ResourceInfo] | None = None) -> ObjectRef:
        """The object a user names by kind. With discovery's ``served`` entries, every name
        kubectl accepts (``deploy``, ``deployments.v1.apps``…, see resourcenames); without,
        the kind or its plural (``Moodle``, ``moodles``, ``deployments.apps``)."""
        self._refresh()
        if served is not None:
            candidates = [gk for gk in resources_for(kind, served) if gk in self._stores]
        else:
            candidates = [gk for gk in self._stores if self._names_kind(gk, kind)]
        known = bool(candidates)
        for gk in candidates:
            found = self._lookup(gk, namespace, name)
            if found is not None:
                return found[0]
        if not known:
            # kubectl's words for a kind it cannot map (kubectl get: "the server doesn't
            # have a resource type"), with the nearest kind a stack can hold
            kinds = sorted({gk[1] for gk in self._stores})
            near = difflib.get_close_matches(kind.partition(".")[0], kinds, n=1, cutoff=0.6)
            raise NotFound(f'no resource type "{kind}" among the kinds a stack can hold'
                           + (f": did you mean {near[0]}?" if near else ""))
        raise NotFound(f'{kind} "{name}" not found' +
                       (f' in namespace "{namespace}"' if namespace else ""))

    def _names_kind(self, gk: GroupKind, kind: str) -> bool:
        wanted, _, group = kind.lower().partition(".")
        names = {gk[1].lower(), gk[1].lower() + "s"}
        custom_plural = next((p for p, g in self._custom.plurals.items() if g == gk), None)
        if custom_plural:
            names.add(custom_plural)
        return wanted in names and (not group or gk[0] == group or gk[0].startswith(group))

    # -- the query ---------------------------------------------------------------------------

    def stack(self, root: ObjectRef) -> Stack:
        """Every object of ``root``'s stack and the edges between them."""
        self._refresh()
        found = self._lookup((root.group, root.kind), root.namespace, root.name)
        if found is None:
            raise NotFound(f"{root} not found")
        stack = Stack(root=found[0])
        stack.objects[found[0]] = found[1]
        expanded: dict[ObjectRef, set[str]] = {}
        queue: deque[tuple[ObjectRef, str]] = deque([(found[0], FULL)])
        while queue:
            ref, mode = queue.popleft()
            done = expanded.setdefault(ref, set())
            if mode in done or FULL in done:
                continue
            done.add(mode)
            obj = stack.objects[ref]
            gk = (ref.group, ref.kind)
            if gk in self._custom.usage:
                stack.usage[ref] = self._custom.usage[gk]
            for source, target, relation, next_mode in self._neighbours(
                    ref, obj, mode, ref == stack.root):
                stack.edges.add(Edge(source[0], target[0], relation))
                other = target if source[0] == ref else source
                if other[0] not in stack.objects:
                    stack.objects[other[0]] = other[1]
                queue.append((other[0], next_mode))
        return stack

    def _mode_for(self, ref: ObjectRef) -> str:
        return FULL if ref.namespace else SHARED

    def _neighbours(
        self, ref: ObjectRef, obj: Obj, mode: str, is_root: bool,
    ) -> Iterator[tuple[tuple[ObjectRef, Obj], tuple[ObjectRef, Obj], str, str]]:
        me = (ref, obj)
        gk = (ref.group, ref.kind)
        full = is_root or (mode == FULL and bool(ref.namespace))
        if is_root or mode == ANCESTOR:
            for owner, uid in owner_targets(obj):
                hit = self._lookup((owner.group, owner.kind), owner.namespace, owner.name)
                if hit is not None and (not uid or metadata(hit[1]).get("uid") == uid):
                    yield hit, me, owner.relation, ANCESTOR
        for target in reference_targets(ref.group, ref.kind, obj):
            hit = self._lookup((target.group, target.kind), target.namespace, target.name)
            if hit is not None:
                yield me, hit, target.relation, self._mode_for(hit[0])
        if not full:
            return
        own_uid = str(metadata(obj).get("uid") or "")
        if own_uid:
            for child_gk, store in self._stores.items():
                for child in store.by_index("owner", own_uid):
                    child_ref = self._ref(child_gk, child)
                    relation = next((t.relation for t, u in owner_targets(child) if u == own_uid),
                                    "owner")
                    yield me, (child_ref, child), relation, self._mode_for(child_ref)
        yield from self._selected_pods(me, gk)
        if gk == ("", "Pod"):
            yield from self._selectors_of_pod(me)
        yield from self._relationships_from(me, gk)
        yield from self._relationships_to(me, gk)
        if is_root:
            key = indexes.target_key(ref.group, ref.kind, ref.namespace, ref.name)
            for referrer_gk, store in self._stores.items():
                if indexes.REFERENCES not in self._indexed.get(id(store), ()):
                    continue
                for referrer in store.by_index(indexes.REFERENCES, key):
                    referrer_ref = self._ref(referrer_gk, referrer)
                    for target in reference_targets(*referrer_gk, referrer):
                        if indexes.key_of_target(target) == key:
                            yield ((referrer_ref, referrer), me, target.relation,
                                   self._mode_for(referrer_ref))

    def _matching(self, gk: GroupKind, namespace: str,
                  selector: label_selectors.Selector) -> list[tuple[ObjectRef, Obj]]:
        """Objects of ``gk`` in ``namespace`` ("*": any) whose labels ``selector`` matches."""
        store = self._stores.get(gk)
        if store is None:
            return []
        self._index(gk, indexes.LABELS, indexes.index_labels)
        candidates: list[Any] | None = None
        for requirement in selector.requirements:
            value = selector.requires_exact_match(requirement.key)
            if value is not None:
                candidates = store.by_index(
                    indexes.LABELS, indexes.label_value(namespace, requirement.key, value))
                break
        if candidates is None:
            candidates = list(store) if namespace == indexes.ANY_NAMESPACE else \
                store.by_index("namespace", namespace)
        return [(self._ref(gk, o), o) for o in candidates
                if selector.matches(metadata(o).get("labels") or {})]

    def _selected_pods(self, me: tuple[ObjectRef, Obj], gk: GroupKind) -> Iterator[Any]:
        selector = pod_selector(gk[0], gk[1], me[1])
        if selector is None:
            return
        for pod in self._matching(("", "Pod"), me[0].namespace, selector):
            yield me, pod, "selector", FULL

    def _selectors_of_pod(self, me: tuple[ObjectRef, Obj]) -> Iterator[Any]:
        namespace = me[0].namespace
        pod_labels = metadata(me[1]).get("labels") or {}
        wanted = [f"{namespace}/{indexes.ANY_NAMESPACE}",
                  *(indexes.label_value(namespace, k, v) for k, v in pod_labels.items())]
        for gk in SELECTOR_KINDS:
            store = self._stores.get(gk)
            if store is None:
                continue
            seen: set[str] = set()
            for value in wanted:
                for holder in store.by_index(indexes.SELECTOR, value):
                    holder_ref = self._ref(gk, holder)
                    if holder_ref.name in seen:
                        continue
                    seen.add(holder_ref.name)
                    selector = pod_selector(gk[0], gk[1], holder)
                    if selector is not None and selector.matches(pod_labels):
                        yield (holder_ref, holder), me, "selector", FULL

    # -- KubePlus relationships --------------------------------------------------------------

    def _relationships_from(self, me: tuple[ObjectRef, Obj], gk: GroupKind) -> Iterator[Any]:
        ref, obj = me
        for rel in self._custom.relationships.get(gk, ()):
            if isinstance(rel, SpecPropertyRelationship):
                value = field_at(obj, rel.on)
                if not isinstance(value, str) or not value:
                    continue
                for target_gk in self._by_kind.get(rel.kind, ()):
                    for hit in self._by_field(target_gk, rel.field, value, ref.namespace):
                        yield me, hit, f"specproperty:{rel.on}", self._mode_for(hit[0])
                continue
            namespace = ref.namespace or indexes.ANY_NAMESPACE
            if isinstance(rel, LabelRelationship) and rel.key is None:
                selector = _selector_from(field_at(obj, rel.value))
                if selector is None:
                    continue
                for target_gk in self._by_kind.get(rel.on, ()):
                    for hit in self._matching(target_gk, namespace, selector):
                        yield me, hit, f"label-selector:{rel.value}", self._mode_for(hit[0])
                continue
            value = field_at(obj, rel.value)
            if not isinstance(value, str) or not value:
                continue
            for target_gk in self._by_kind.get(rel.on, ()):
                for hit in self._related(target_gk, rel, value, namespace):
                    yield me, hit, _relation(rel), self._mode_for(hit[0])

    def _related(self, gk: GroupKind, rel: AnnotationRelationship | LabelRelationship,
                 value: str, namespace: str) -> list[tuple[ObjectRef, Obj]]:
        store = self._stores.get(gk)
        if store is None:
            return []
        if isinstance(rel, LabelRelationship):
            assert rel.key is not None
            candidates = store.by_index(indexes.LABELS,
                                        indexes.label_value(namespace, rel.key, value))
        else:
            name, _ = indexes.annotation_index(rel.key)
            candidates = store.by_index(name, value)
            if namespace != indexes.ANY_NAMESPACE:
                candidates = [c for c in candidates if metadata(c).get("namespace") == namespace]
        return [(self._ref(gk, c), c) for c in candidates if _relates(rel, c, value)]

    def _by_field(self, gk: GroupKind, path: str, value: str,
                  namespace: str) -> list[tuple[ObjectRef, Obj]]:
        if path == "metadata.name":
            hit = self._lookup(gk, namespace, value)
            return [hit] if hit is not None else []
        store = self._stores.get(gk)
        if store is None:
            return []
        self._index(gk, *indexes.path_index(path))
        return [(self._ref(gk, o), o) for o in store.by_index(indexes.path_index(path)[0], value)
                if not self._is_namespaced(gk) or not namespace
                or metadata(o).get("namespace") == namespace]

    def _relationships_to(self, me: tuple[ObjectRef, Obj], gk: GroupKind) -> Iterator[Any]:
        ref, obj = me
        for instance_gk, rel in self._custom.by_target_kind.get(gk[1], ()):
            instance_ns = ref.namespace if self._is_namespaced(instance_gk) else ""
            if isinstance(rel, SpecPropertyRelationship):
                value = field_at(obj, rel.field)
                if isinstance(value, str) and value:
                    for hit in self._by_field(instance_gk, rel.on, value, instance_ns):
                        yield hit, me, f"specproperty:{rel.on}", self._mode_for(hit[0])
                continue
            if isinstance(rel, LabelRelationship) and rel.key is None:
                for hit in self._instances(instance_gk, instance_ns):
                    selector = _selector_from(field_at(hit[1], rel.value))
                    if selector is not None and selector.matches(
                            metadata(obj).get("labels") or {}):
                        yield hit, me, f"label-selector:{rel.value}", self._mode_for(hit[0])
                continue
            source = "labels" if isinstance(rel, LabelRelationship) else "annotations"
            assert rel.key is not None
            held = (metadata(obj).get(source) or {}).get(rel.key)
            if not isinstance(held, str):
                continue
            values = [p.strip() for p in held.split(",")] if (
                isinstance(rel, AnnotationRelationship) and rel.contains) else [held]
            for value in values:
                for hit in self._by_field(instance_gk, rel.value, value, instance_ns):
                    if _relates(rel, obj, value):
                        yield hit, me, _relation(rel), self._mode_for(hit[0])

    def _instances(self, gk: GroupKind, namespace: str) -> list[tuple[ObjectRef, Obj]]:
        store = self._stores.get(gk)
        if store is None:
            return []
        objs = store.by_index("namespace", namespace) if namespace else list(store)
        return [(self._ref(gk, o), o) for o in objs]


def _relation(rel: AnnotationRelationship | LabelRelationship) -> str:
    return f"{'annotation' if isinstance(rel, AnnotationRelationship) else 'label'}:{rel.key}"


def _relates(rel: AnnotationRelationship | LabelRelationship, obj: Obj, value: str) -> bool:
    """Exact matching: the whole value, or (``contains``) one whole comma-separated element."""
    source = "annotations" if isinstance(rel, AnnotationRelationship) else "labels"
    held = (metadata(obj).get(source) or {}).get(rel.key or "")
    if not isinstance(held, str):
        return False
    if isinstance(rel, AnnotationRelationship) and rel.contains:
        return value in (p.strip() for p in held.split(","))
    return held == value


def _selector_from(value: Any) -> label_selectors.Selector | None:
    """A label selector held by an instance: a LabelSelector, a map of labels or a string."""
    try:
        if isinstance(value, Mapping):
            if "matchLabels" in value or "matchExpressions" in value:
                selector = label_selectors.from_label_selector(value)
            else:
                selector = label_selectors.selector_from_set(
                    {str(k): str(v) for k, v in value.items()})
        elif isinstance(value, str) and value:
            selector = label_selectors.parse(value)
        else:
            return None
    except (ValueError, TypeError):
        return None
    # an empty selector would relate the instance to everything: not a declared relation
    return None if selector.nothing or selector.empty else selector


def _read_crds(crds: list[Obj]) -> _CustomKinds:
    out = _CustomKinds({}, {}, {}, {}, {})
    for crd in crds:
        infos = custom_kinds([dict(crd)])
        if not infos:
            continue
        gk = (infos[0].group, infos[0].kind)
        info = infos[0]
        out.namespaced[gk] = info.namespaced
        plural = ((crd.get("spec") or {}).get("names") or {}).get("plural")
        if plural:
            out.plurals[plural] = gk
        annotations = metadata(crd).get("annotations") or {}
        if annotations.get(USAGE_ANNOTATION):
            out.usage[gk] = annotations[USAGE_ANNOTATION]
        try:
            rels = parse_relationships(annotations)
        except RelationshipSyntaxError:
            continue  # reported by `setpoint check`; the graph goes on without them
        out.relationships[gk] = rels
        for rel in rels:
            target = rel.kind if isinstance(rel, SpecPropertyRelationship) else rel.on
            out.by_target_kind.setdefault(target, []).append((gk, rel))
    return out
