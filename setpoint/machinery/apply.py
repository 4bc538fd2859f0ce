"""Server-side apply: merge a manager's configuration into an object, by ownership.

structured-merge-diff's ``Updater.Apply`` inside the apiserver's field manager: the
configuration is merged into the live object as the schema says (granular structs and
maps, atomic or associative lists), fields the manager applied before and no longer applies
are removed unless someone else owns them, and changing a field another manager owns is a
409 conflict unless forced, which takes the field over. ``kubectl`` gets the apiserver's
upgrade path from client-side apply (its last-applied annotation counts as ownership).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from setpoint.machinery import errors
from setpoint.machinery import fieldpath as fp
from setpoint.machinery import managedfields as mf
from setpoint.machinery import typedvalue as tv
from setpoint.machinery.errors import Cause, StatusError
from setpoint.machinery.fieldcompare import compare, json_equal
from setpoint.machinery.fieldpath import MEMBER, FieldSet, Node
from setpoint.machinery.names import TOTAL_ANNOTATION_SIZE_LIMIT
from setpoint.machinery.typedvalue import MAP, SchemaError, TypeRef

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_KUBECTL = "kubectl"
BEFORE_FIRST_APPLY = "before-first-apply"
_MISSING: Any = object()
_NULL: Any = object()  # what a map or list emptied by removal becomes (dropped by its parent)


def apply(schema: TypeRef, live: dict[str, Any] | None, config: dict[str, Any], *,
          manager: str, force: bool, api_version: str, now: str, subresource: str = "",
          kind: str | None = None, reset_fields: Iterable[str | Sequence[str]] = (),
          sent: dict[str, Any] | None = None) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``live`` (``None``: a create).

    ``sent`` is the configuration as the request sent it (default: ``config``), nulls and
    unknown fields included: kubectl's last-applied annotation, kept up to date for the
    ``kubectl`` manager, is built from it.

    Returns a fresh dict carrying the updated ``metadata.managedFields``; the inputs are not
    modified. ``kind`` (default: the live object's) and ``api_version`` are what the
    endpoint serves; ``reset_fields`` are the paths the endpoint's strategy resets (see
    ``update_managed_fields``). A no-op apply returns the live object unchanged apart from
    ownership. Raises ``StatusError``: 400 for a configuration of another kind or version, one
    carrying managedFields; 500 for one with a field the schema does not declare (see
    ``typed_config_fields``); and 409
    ``Conflict`` with ``FieldManagerConflict`` causes when ``force`` is false and another
    manager owns a field this apply changes.
    """
    _check_type(config, api_version, kind or (live or {}).get("kind"))
    cfg_meta = config.get("metadata")
    if isinstance(cfg_meta, dict) and cfg_meta.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    config_set = typed_config_fields(schema, config)

    live_meta = (live or {}).get("metadata") or {}
    try:
        managed = mf.decode(live_meta.get("managedFields"))
    except ValueError as e:
        raise errors.internal(f"failed to decode managed fields: {e}") from e
    base = _without_managed_fields(live) if live is not None else {}
    if live is not None:
        _check_live(schema, base)
        if not managed.sets:
            managed = _before_first_apply(schema, base, api_version, now, subresource,
                                          reset_fields)
    key = mf.manager_key(manager or "unknown", mf.APPLY, api_version, subresource)
    ignored = mf.reset_set(reset_fields)

    def attempt(force: bool) -> tuple[dict[str, Any], dict[mf.ManagerKey, mf.VersionedSet]]:
        sets = dict(managed.sets)
        last = sets.get(key)
        merged = merge(schema, base, config)
        sets[key] = mf.VersionedSet(config_set.recursive_difference(ignored), api_version, True)
        merged = _prune(schema, merged, sets, key, last)
        return merged, _update(schema, base, merged, sets, key, force, ignored)

    try:
        merged, sets = attempt(force)
    except _Conflicts as conflicts:
        allowed = (_last_applied_ownership(schema, base, api_version) if manager == _KUBECTL
                   else None)
        remaining = conflicts.without(allowed) if allowed is not None else conflicts
        if remaining.sets:
            raise remaining.error() from None
        merged, sets = attempt(True)

    own = sets.get(key)
    if own is not None:
        stripped = own.fields.difference(mf.STRIPPED_FIELDS)
        if stripped.empty():
            del sets[key]
        else:
            sets[key] = mf.VersionedSet(stripped, own.api_version, True)
    managed.sets = sets
    result: dict[str, Any]
    if json_equal(base, merged):
        result = _copy(base)
    else:
        result = merged
        managed.times[key] = now
    if manager == _KUBECTL and ((result.get("metadata") or {}).get(
            "annotations") or {}).get(LAST_APPLIED):
        annotations = result["metadata"]["annotations"]
        annotations[LAST_APPLIED] = _last_applied_of(config if sent is None else sent)
        if _annotations_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT:
            # lastappliedupdater.go setLastApplied: an annotation too large is dropped
            del annotations[LAST_APPLIED]
    _store_managed_fields(result, live_meta, mf.encode(managed))
    return result


def _before_first_apply(schema: TypeRef, live: dict[str, Any], api_version: str, now: str,
                        subresource: str, reset_fields: Iterable[str | Sequence[str]]
                        ) -> mf.Managed:
    """An object nobody tracks is first given to "before-first-apply", an Update manager
    owning every field it has, so that the first applier conflicts with what was there
    (skipNonAppliedManager.Apply in k8s.io/apimachinery
    pkg/util/managedfields/internal/skipnonapplied.go)."""
    tracked = _copy(live)
    mf.update_managed_fields(schema, None, tracked, manager=BEFORE_FIRST_APPLY,
                             api_version=api_version, now=now, subresource=subresource,
                             reset_fields=reset_fields)
    return mf.decode((tracked.get("metadata") or {}).get("managedFields"))


def typed_config_fields(schema: TypeRef, config: dict[str, Any]) -> FieldSet:
    """The fields of an apply configuration, which must fit the schema as a typed value.

    A field the schema does not declare, an associative list item without its keys or a
    repeated key fails ``ObjectToTyped`` of the patch object in structured-merge-diff, whose
    plain error kube-apiserver answers as a 500 with no reason, whatever ``fieldValidation``
    says (``structuredMergeManager.Apply`` in k8s.io/apimachinery
    pkg/util/managedfields/internal/structuredmerge.go, then ``ErrorToAPIStatus``).
    """
    try:
        return tv.fieldset_of(schema, config, strict=True)
    except SchemaError as e:
        raise StatusError(500, "", f"failed to create typed patch object ({_gvknn(config)}): "
                          f"{e}") from e


def _check_live(schema: TypeRef, live: dict[str, Any]) -> None:
    """A stored object that does not fit the schema as a typed value (an associative list
    item without its key, which validation of some kinds lets through): structured-merge-diff
    cannot apply to it, and kube-apiserver answers with its plain error, a 500 with no reason
    (``structuredMergeManager.Apply`` in k8s.io/apimachinery
    pkg/util/managedfields/internal/structuredmerge.go, then ``ErrorToAPIStatus``)."""
    try:
        tv.fieldset_of(schema, live, typed=True)
    except SchemaError as e:
        raise StatusError(500, "", f"failed to create typed live object ({_gvknn(live)}): {e}"
                          ) from e


def _check_type(config: dict[str, Any], api_version: str, kind: str | None) -> None:
    got_version, got_kind = config.get("apiVersion") or "", config.get("kind") or ""
    if got_version != api_version or not got_kind or (kind and got_kind != kind):
        raise errors.bad_request(f"invalid object type: {_gvk(got_version, got_kind)}")


def _gvk(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _gvknn(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}; {_gvk(obj.get('apiVersion') or '', obj.get('kind') or '')}"


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _store_managed_fields(result: dict[str, Any], live_meta: dict[str, Any],
                          entries: list[dict[str, Any]]) -> None:
    meta = result.get("metadata")
    if not isinstance(meta, dict):
        if not entries:
            return
        meta = result["metadata"] = {}
    meta.pop("managedFields", None)
    if not entries:
        return
    # keep the entry where the stored object had it, as a typed encoder would
    ordered: dict[str, Any] = {}
    for k in live_meta:
        if k == "managedFields":
            ordered[k] = entries
        elif k in meta:
            ordered[k] = meta[k]
    ordered.update((k, v) for k, v in meta.items() if k not in ordered)
    ordered.setdefault("managedFields", entries)
    result["metadata"] = ordered


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


# -- merging ------------------------------------------------------------------------------


def merge(schema: TypeRef, live: Any, config: Any) -> Any:
    """``config`` merged into ``live``: config's leaves win, nothing is removed."""
    return _merge(schema, live, config, True)


def _merge(tr: TypeRef, lhs: Any, rhs: Any, resource: bool = False) -> Any:
    shape = tv.resolve(tr, rhs if rhs is not _MISSING else lhs, resource=resource)
    winner = rhs if rhs is not _MISSING else lhs
    if shape.kind == tv.SCALAR or shape.atomic:
        return _copy(winner)
    if shape.kind == MAP:
        lm: dict[str, Any] = lhs if isinstance(lhs, dict) else {}
        rm: dict[str, Any] = rhs if isinstance(rhs, dict) else {}
        if not lm and not rm:
            return _copy(winner)
        out = {}
        for k, v in lm.items():
            out[k] = _merge(tv.child_type(shape, fp.field(k)), v, rm.get(k, _MISSING))
        for k, v in rm.items():
            if k not in lm:
                out[k] = _merge(tv.child_type(shape, fp.field(k)), _MISSING, v)
        return out
    ll: list[Any] = lhs if isinstance(lhs, list) else []
    rl: list[Any] = rhs if isinstance(rhs, list) else []
    if not ll and not rl:
        return _copy(winner)
    return _merge_list(shape, ll, rl)


def _index(shape: tv.Shape, items: list[Any]) -> tuple[list[str], dict[str, Any]]:
    order: list[str] = []
    seen: dict[str, Any] = {}
    for item in items:
        try:
            pe = tv.item_element(shape, item)
        except SchemaError:
            continue
        if pe not in seen:
            seen[pe] = item
            order.append(pe)
    return order, seen


def _merge_list(shape: tv.Shape, lhs: list[Any], rhs: list[Any]) -> list[Any]:
    """Merged items ordered as structured-merge-diff orders them: config order for the
    items config names, live-only items kept where they were relative to those. The live
    list may repeat a key: its items are kept as they are unless config names the key, which
    then merges with nothing (typed/merge.go visitListItems, indexListPathElements)."""
    r_order, r_items = _index(shape, rhs)
    l_order: list[str] = []
    l_values: list[Any] = []
    l_items: dict[str, Any] = {}
    for item in lhs:
        try:
            pe = tv.item_element(shape, item)
        except SchemaError:
            continue
        # a repeated key's items are merged with nothing ("make them nil")
        l_items[pe] = None if pe in l_items else item
        l_order.append(pe)
        l_values.append(item)
    shared = [pe for pe in r_order if pe in l_items]
    next_shared = shared.pop(0) if shared else None
    merged: set[str] = set()
    out = []
    li = ri = 0
    el = shape.element
    while li < len(l_order) or ri < len(r_order):
        if li < len(l_order) and ri < len(r_order):
            pe = l_order[li]
            if pe == r_order[ri]:
                merged.add(pe)
                out.append(_merge(el, l_items[pe], r_items[pe]))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in r_items and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(l_order):
            pe = l_order[li]
            if pe not in r_items:
                out.append(_merge(el, l_values[li], _MISSING))
                li += 1
                continue
            if pe in merged:
                li += 1  # (merged already; Go goes on to the config's item in this round)
        if ri < len(r_order):
            pe = r_order[ri]
            merged.add(pe)
            out.append(_merge(el, l_items.get(pe, _MISSING), r_items[pe]))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


# -- removing -----------------------------------------------------------------------------


def remove_items(schema: TypeRef, obj: dict[str, Any], items: FieldSet) -> dict[str, Any]:
    """``obj`` without the fields and list/map items in ``items`` (whole subtrees)."""
    out = _remove(schema, obj, items.root, True)
    return out if isinstance(out, dict) else {}


def _remove(tr: TypeRef, v: Any, node: Node, resource: bool = False) -> Any:
    shape = tv.resolve(tr, v, resource=resource)
    if shape.kind == tv.SCALAR:
        return v
    if shape.atomic:
        return _NULL
    if shape.kind == MAP:
        if not isinstance(v, dict) or not v:
            return _NULL
        out = {}
        for k, cv in v.items():
            pe = fp.field(k)
            sub = node.get(pe)
            if sub is not None and MEMBER in sub:
                continue
            if sub:
                cv = _remove(tv.child_type(shape, pe), cv, sub)
                if cv is _NULL:
                    continue
            out[k] = cv
        return out if out else _NULL
    if not isinstance(v, list) or not v:
        return _NULL
    items = []
    for item in v:
        try:
            pe = tv.item_element(shape, item)
        except SchemaError:
            items.append(item)
            continue
        sub = node.get(pe)
        if sub is not None and MEMBER in sub:
            continue
        if sub:
            item = _remove(shape.element, item, sub)
            if item is _NULL:
                continue
        items.append(item)
    return items if items else _NULL


# -- pruning what the manager stopped applying ----------------------------------------------


def _prune(schema: TypeRef, merged: dict[str, Any], sets: dict[mf.ManagerKey, mf.VersionedSet],
           key: mf.ManagerKey, last: mf.VersionedSet | None) -> dict[str, Any]:
    """Remove what ``key`` applied last time and not now, unless another manager owns it."""
    if last is None or last.fields.empty():
        return merged

    def named(s: FieldSet) -> FieldSet:
        return tv.ensure_named_fields_are_members(s, schema)

    last_named = named(last.fields)
    pruned = remove_items(schema, merged, last_named)
    owned = FieldSet()
    for vs in sets.values():
        owned = owned.union(vs.fields)
    merged_set = named(tv.fieldset_of(schema, merged))
    pruned_set = named(tv.fieldset_of(schema, pruned))
    pruned = remove_items(schema, merged, merged_set.difference(pruned_set.union(named(owned))))
    pruned_set = named(tv.fieldset_of(schema, pruned))
    return remove_items(schema, merged, merged_set.difference(pruned_set).intersection(last_named))


# -- ownership and conflicts ----------------------------------------------------------------


class _Conflicts(Exception):
    def __init__(self, sets: dict[mf.ManagerKey, FieldSet]) -> None:
        super().__init__("apply conflicts")
        self.sets = sets

    def without(self, allowed: FieldSet) -> _Conflicts:
        rest = {k: s.difference(allowed) for k, s in self.sets.items()}
        return _Conflicts({k: s for k, s in rest.items() if not s.empty()})

    def error(self) -> StatusError:
        return conflict_error([(k, p) for k in sorted(self.sets, key=mf.manager_identifier)
                               for p in self.sets[k]])


def conflict_error(conflicts: Sequence[tuple[mf.ManagerKey, fp.Path]]) -> StatusError:
    """The apiserver's 409 for apply conflicts, one ``FieldManagerConflict`` cause each."""
    causes = [Cause("FieldManagerConflict", f"conflict with {mf.describe_manager(k)}",
                    fp.path_string(p)) for k, p in conflicts]
    if len(conflicts) == 1:
        k, p = conflicts[0]
        message = (f"Apply failed with 1 conflict: conflict with {mf.describe_manager(k)}: "
                   f"{fp.path_string(p)}")
    else:
        lines: list[str] = []
        for k in sorted({k for k, _ in conflicts}, key=mf.manager_identifier):
            lines.append(f"conflicts with {mf.describe_manager(k)}:")
            lines.extend(f"- {fp.path_string(p)}" for kk, p in conflicts if kk == k)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, causes=causes)


def _update(schema: TypeRef, live: dict[str, Any], merged: dict[str, Any],
            sets: dict[mf.ManagerKey, mf.VersionedSet], key: mf.ManagerKey, force: bool,
            ignored: FieldSet) -> dict[mf.ManagerKey, mf.VersionedSet]:
    c = compare(schema, live, merged)
    if not ignored.empty():
        c = c.exclude(ignored)
    changed = c.modified.union(c.added)
    conflicts = {}
    for other, vs in sets.items():
        if other != key:
            clash = vs.fields.intersection(changed)
            if not clash.empty():
                conflicts[other] = clash
    if conflicts and not force:
        raise _Conflicts(conflicts)
    out = {}
    for other, vs in sets.items():
        rest = vs.fields
        if other != key:
            rest = rest.difference(changed).difference(c.removed)
        if not rest.empty():
            out[other] = mf.VersionedSet(rest, vs.api_version, vs.applied)
    return out


def _last_applied_ownership(schema: TypeRef, live: dict[str, Any],
                            api_version: str) -> FieldSet | None:
    """The fields kubectl's client-side apply owns: last-applied fields still as applied,
    when the annotation was written at the version applied through (lastappliedmanager.go
    allowedConflictsFromLastApplied)."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED)
    if not text:
        return None
    try:
        last = json.loads(text)
        if not isinstance(last, dict) or last.get("apiVersion") != api_version:
            return None
        owned = tv.fieldset_of(schema, last, strict=True)
        c = compare(schema, last, live)
    except (ValueError, SchemaError):
        return None
    return owned.difference(c.modified).difference(c.added).difference(c.removed)


def _annotations_size(annotations: dict[str, Any]) -> int:
    """``ValidateAnnotationsSize``'s total: the bytes of every key and value."""
    return sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())


def _last_applied_of(config: dict[str, Any]) -> str:
    """lastappliedupdater.go ``buildLastApplied``: the applied configuration as sent, less
    the annotation, as ``unstructured.UnstructuredJSONScheme`` encodes it (Go's encoder:
    map keys sorted, HTML escaped, a trailing newline)."""
    doc = _copy(config)
    meta = doc.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        meta["annotations"].pop(LAST_APPLIED, None)
    return fp.go_json(_sorted_keys(doc)) + "\n"


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value
