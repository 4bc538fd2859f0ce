"""Comparing two objects field by field, as structured-merge-diff's ``typed`` package does.

``compare`` finds the fields added, modified and removed from one object to the next (its
``Comparison``), walking both by their schema: the field manager and apply build on it.
``created_fields_v1`` is the same walk specialised for a create by a sole manager: the
``fieldsV1`` of what the write owns, written in the walk rather than compared, differenced
and encoded in turn (the result is the same, key for key).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from setpoint.machinery import fieldpath as fp
from setpoint.machinery import typedvalue as tv
from setpoint.machinery.fieldpath import MEMBER, FieldSet, Node, Path
from setpoint.machinery.typedvalue import MAP, TypeRef

_MISSING: Any = object()
# isinstance() with a tuple: "dict | list" builds a union object at every call, and these
# checks run for every value of every write
_CONTAINERS = (dict, list)


@dataclass
class Comparison:
    """What changed from one object to the next (structured-merge-diff's ``Comparison``)."""

    added: FieldSet = field(default_factory=FieldSet)
    modified: FieldSet = field(default_factory=FieldSet)
    removed: FieldSet = field(default_factory=FieldSet)

    def exclude(self, ignored: FieldSet) -> Comparison:
        return Comparison(self.added.recursive_difference(ignored),
                          self.modified.recursive_difference(ignored),
                          self.removed.recursive_difference(ignored))

    def is_same(self) -> bool:
        return self.added.empty() and self.modified.empty() and self.removed.empty()


def compare(schema: TypeRef, old: Any, new: Any) -> Comparison:
    """Fields added, modified and removed from ``old`` to ``new`` (either may be ``None``)."""
    c = Comparison()
    _compare(schema, _MISSING if old is None else old, _MISSING if new is None else new,
             (), c, True)
    return c


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values where ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (isinstance(b, dict) and a.keys() == b.keys()
                and all(json_equal(v, b[k]) for k, v in a.items()))
    if isinstance(a, list):
        return (isinstance(b, list) and len(a) == len(b)
                and all(json_equal(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(b, _CONTAINERS):
        return False
    return bool(a == b)


def _container(shape: tv.Shape) -> type:
    return dict if shape.kind == MAP else list


def _compare(tr: TypeRef, lhs: Any, rhs: Any, path: Path, c: Comparison,
             resource: bool = False) -> None:
    if lhs is _MISSING and path:
        # a new subtree (most of a create): every path in it is added; built in one walk
        # rather than inserted path by path from the root
        node = c.added.root
        for pe in path[:-1]:
            node = node.setdefault(pe, {})
        subtree = _added(tr, rhs, path, resource)
        existing = node.get(path[-1])
        node[path[-1]] = subtree if existing is None else fp.union_nodes(existing, subtree)
        return
    shape = tv.resolve(tr, rhs if rhs is not _MISSING else lhs, resource=resource)
    if shape.kind != tv.SCALAR and not shape.atomic:
        kind = _container(shape)
        if tr is None and lhs is not _MISSING and rhs is not _MISSING and (
                type(lhs) is not type(rhs) and (isinstance(lhs, _CONTAINERS)
                                                or isinstance(rhs, _CONTAINERS))):
            # a deduced value changed kind: the old subtree goes, the new one comes
            c.modified.insert(path)
            if isinstance(lhs, dict):
                _compare_maps(tv.resolve(None, lhs), lhs, {}, path, c)
            if isinstance(rhs, dict):
                _compare_maps(tv.resolve(None, rhs), {}, rhs, path, c)
            return
        lv = lhs if isinstance(lhs, kind) else None
        rv = rhs if isinstance(rhs, kind) else None
        if lv or rv:
            if shape.kind == MAP:
                _compare_maps(shape, lhs if isinstance(lhs, dict) else {},
                              rhs if isinstance(rhs, dict) else {}, path, c)
            else:
                _compare_lists(shape, lhs if isinstance(lhs, list) else [],
                               rhs if isinstance(rhs, list) else [], path, c)
            if lhs is _MISSING:
                c.added.insert(path)
            elif rhs is _MISSING:
                c.removed.insert(path)
            return
    if lhs is _MISSING:
        c.added.insert(path)
    elif rhs is _MISSING:
        c.removed.insert(path)
    elif not json_equal(lhs, rhs):
        c.modified.insert(path)


def _added(tr: TypeRef, rhs: Any, path: Path, resource: bool = False) -> fp.Node:
    """The paths of ``rhs``, new at ``path``, as ``_compare`` finds them added: the value
    itself and, unless its type is atomic, every field or item beneath it."""
    if not isinstance(rhs, _CONTAINERS):
        return {fp.MEMBER: {}}  # a scalar (or null) is a leaf whatever its type says
    shape = tv.resolve(tr, rhs, resource=resource)
    node: fp.Node = {fp.MEMBER: {}}
    if shape.kind == MAP:
        if not shape.atomic and isinstance(rhs, dict):
            fields, other = shape.fields, shape.other_fields
            for k, v in rhs.items():
                pe = "f:" + k
                node[pe] = (_added(fields.get(k, other), v, (*path, pe))
                            if isinstance(v, _CONTAINERS) else {fp.MEMBER: {}})
    elif shape.kind != tv.SCALAR and not shape.atomic and isinstance(rhs, list):
        repeated = repeated_keys(shape, rhs, path)
        for pe, item in index_items(shape, rhs, path).items():
            node[pe] = ({fp.MEMBER: {}} if pe in repeated
                        else _added(shape.element, item, (*path, pe)))
    return node


def _compare_maps(shape: tv.Shape, lhs: dict[str, Any], rhs: dict[str, Any], path: Path,
                  c: Comparison) -> None:
    fields, other = shape.fields, shape.other_fields  # tv.child_type, inlined
    for k, lv in lhs.items():
        rv = rhs.get(k, _MISSING)
        if isinstance(lv, _CONTAINERS):
            text = _same(lv, rv)
            if text is not None:
                # nothing in it changed (the spec a status write keeps from the stored
                # object, the metadata most writes leave alone), but typing it may still fail
                _check_shared(fields.get(k, other), lv, (*path, "f:" + k), text)
                continue
        _compare(fields.get(k, other), lv, rv, (*path, "f:" + k), c)
    for k, rv in rhs.items():
        if k not in lhs:
            _compare(fields.get(k, other), _MISSING, rv, (*path, "f:" + k), c)


# what ``_same`` gives for a value found unchanged whose JSON text it did not write (the same
# object on both sides, or an integer past 64 bits): orjson never writes empty text
_UNWRITTEN = b""


def _same(lhs: dict[str, Any] | list[Any], rhs: Any) -> bytes | None:
    """Whether the walk would find nothing changed from ``lhs`` to ``rhs``, told at C speed:
    the same object, or equal (``==``, which fails fast where they differ) and written
    alike by orjson (which ``==`` is not: it takes ``true`` for ``1``). A JSON value equals
    itself: no decoder lets NaN in. None where something changed; else the JSON text of
    ``lhs`` written to tell it, which ``_check_shared`` keys on (so a write's unchanged spec
    is encoded twice, not three times), or ``_UNWRITTEN``."""
    if lhs is rhs:
        return _UNWRITTEN
    if lhs.__class__ is not rhs.__class__ or lhs != rhs:
        return None
    try:
        text = orjson.dumps(lhs)
        return text if text == orjson.dumps(rhs) else None
    except TypeError:  # (orjson.JSONEncodeError: an integer past 64 bits) the walk decides
        return None


# (shape, JSON text) of values found typable: a pod's spec comes back unchanged at every
# status write. The shape is held, so its identity is never another's.
_TYPABLE: dict[tuple[tv.Shape, bytes], None] = {}
_TYPABLE_MAX = 2048
# An object's metadata is never remembered: its text holds the resourceVersion, new at every
# write, so it would never be found again and would only crowd the specs out of _TYPABLE
_UNREMEMBERED: Path = ("f:metadata",)


def _check_shared(tr: TypeRef, v: Any, path: Path, text: bytes = _UNWRITTEN) -> None:
    """``_check_typed``, once per distinct value of a type: whether a value types depends
    only on its type and its JSON text (list items are told apart by their keys' JSON).
    ``text``: ``orjson.dumps(v)`` where the caller has it already."""
    if tr is None:
        return
    shape = tv.resolve(tr, v)
    if shape.kind == tv.SCALAR or shape.atomic:
        return
    if path == _UNREMEMBERED:
        _check_typed(tr, v, path)
        return
    if not text:
        try:
            text = orjson.dumps(v)
        except TypeError:  # (orjson.JSONEncodeError: an integer past 64 bits)
            _check_typed(tr, v, path)
            return
    if (shape, text) in _TYPABLE:
        return
    _check_typed(tr, v, path)  # raises where it does not type: that is not kept
    if len(_TYPABLE) >= _TYPABLE_MAX:
        _TYPABLE.clear()
    _TYPABLE[shape, text] = None


def _check_typed(tr: TypeRef, v: Any, path: Path) -> None:
    """What ``_compare`` does with one value on both sides: it finds nothing changed (a JSON
    value equals itself: no decoder lets NaN in), but indexes the associative lists within,
    raising ``SchemaError`` where an item has no key, as typing the object does in
    structured-merge-diff (typed/helpers.go) whether or not anything changed."""
    if tr is None:
        return  # deduced all the way down: maps of deduced values and atomic lists
    shape = tv.resolve(tr, v)
    if shape.kind == tv.SCALAR or shape.atomic:
        return
    if shape.kind == MAP:
        if isinstance(v, dict):
            fields, other = shape.fields, shape.other_fields
            for k, cv in v.items():
                if cv and isinstance(cv, _CONTAINERS):
                    _check_typed(fields.get(k, other), cv, (*path, "f:" + k))
    elif v and isinstance(v, list):
        for pe, item in index_items(shape, v, path).items():
            if item and isinstance(item, _CONTAINERS):
                _check_typed(shape.element, item, (*path, pe))


def index_items(shape: tv.Shape, items: list[Any], path: Path) -> dict[str, Any]:
    """Items of an associative list by path element; the first of duplicates wins."""
    out: dict[str, Any] = {}
    for item in items:
        out.setdefault(tv.item_element(shape, item, path), item)
    return out


_NONE: frozenset[str] = frozenset()


def repeated_keys(shape: tv.Shape, items: list[Any], path: Path) -> frozenset[str]:
    """The path elements more than one item of a new list has: structured-merge-diff's
    compare adds each as one leaf, a "duplicate marker" with nothing beneath it
    (typed/compare.go visitListItems)."""
    if len(items) < 2:
        return _NONE
    seen: set[str] = set()
    repeated: set[str] = set()
    for item in items:
        pe = tv.item_element(shape, item, path)
        if pe in seen:
            repeated.add(pe)
        seen.add(pe)
    return frozenset(repeated) if repeated else _NONE


def _compare_lists(shape: tv.Shape, lhs: list[Any], rhs: list[Any], path: Path,
                   c: Comparison) -> None:
    lidx = index_items(shape, lhs, path)
    ridx = index_items(shape, rhs, path)
    for pe, item in lidx.items():
        ri = ridx.get(pe, _MISSING)
        if isinstance(item, _CONTAINERS):
            text = _same(item, ri)
            if text is not None:
                _check_shared(shape.element, item, (*path, pe), text)
                continue
        _compare(shape.element, item, ri, (*path, pe), c)
    for pe, item in ridx.items():
        if pe not in lidx:
            _compare(shape.element, _MISSING, item, (*path, pe), c)


# -- what a create owns ----------------------------------------------------------------------


def created_fields_v1(schema: TypeRef, zero: dict[str, Any], new: dict[str, Any],
                      ignored: FieldSet, stripped: FieldSet) -> dict[str, Any]:
    """The ``fieldsV1`` a create's manager owns when no other manager owns anything.

    That is ``(added | modified) - removed`` of ``compare(schema, zero, new)``, without the
    ``ignored`` paths and everything beneath them (``recursive_difference``) and without the
    ``stripped`` members (``difference``), encoded: in one walk, filtered on the way out.
    Raises ``SchemaError`` where ``compare`` does. (Removed paths are only ever in ``zero``,
    so no owned path is one of them.)
    """
    _, body = _changed_v1(schema, zero, new, True, stripped.root or None)
    return _filtered(body, ignored.root or None, stripped.root or None)


def _v1(member: bool, body: dict[str, Any]) -> dict[str, Any] | None:
    """A child's ``fieldsV1`` value: ``{}`` for a leaf member, None when nothing is owned."""
    if member:
        return {MEMBER: {}, **body} if body else {}
    return body or None


def _added_v1(tr: TypeRef, rhs: Any) -> dict[str, Any]:
    """What ``_added`` finds beneath a new value, encoded (the value itself is a member)."""
    if not isinstance(rhs, _CONTAINERS):
        return {}
    shape = tv.resolve(tr, rhs)
    out: dict[str, Any] = {}
    if shape.kind == MAP:
        if shape.atomic or not isinstance(rhs, dict):
            return out
        fields, other = shape.fields, shape.other_fields
        for k in sorted(rhs):  # "f:" + name sorts as the name
            v = rhs[k]
            if isinstance(v, _CONTAINERS):
                body = _added_v1(fields.get(k, other), v)
                out["f:" + k] = {MEMBER: {}, **body} if body else {}
            else:
                out["f:" + k] = {}
    elif shape.kind != tv.SCALAR and not shape.atomic and isinstance(rhs, list):
        items = index_items(shape, rhs, ())
        repeated = repeated_keys(shape, rhs, ())
        for pe in fp.sort_elements(items):
            body = {} if pe in repeated else _added_v1(shape.element, items[pe])
            out[pe] = {MEMBER: {}, **body} if body else {}
    return out


def _changed_v1(tr: TypeRef, lhs: Any, rhs: Any, resource: bool = False,
                strip: Node | None = None) -> tuple[bool, dict[str, Any]]:
    """``_compare`` of two present values: whether the value itself is added or modified,
    and the encoded added or modified paths beneath it. ``strip``: the stripped fields
    (``created_fields_v1``) beneath the value, whose scalar leaves need no walk."""
    shape = tv.resolve(tr, rhs, resource=resource)
    if shape.kind != tv.SCALAR and not shape.atomic:
        if tr is None and type(lhs) is not type(rhs) and (
                isinstance(lhs, _CONTAINERS) or isinstance(rhs, _CONTAINERS)):
            # a deduced value changed kind: modified, with the new map's fields added (the
            # old subtree's removal owns nothing and, deduced, cannot fail to type)
            return True, (_added_v1(None, rhs) if isinstance(rhs, dict) else {})
        if shape.kind == MAP:
            lm = lhs if isinstance(lhs, dict) else None
            rm = rhs if isinstance(rhs, dict) else None
            if lm or rm:
                return False, _maps_v1(shape, lm or {}, rm or {}, strip)
        else:
            ll = lhs if isinstance(lhs, list) else None
            rl = rhs if isinstance(rhs, list) else None
            if ll or rl:
                return False, _lists_v1(shape, ll or [], rl or [])
    return not json_equal(lhs, rhs), {}


def _removed(tr: TypeRef, lhs: Any) -> None:
    """A removed value owns nothing, but typing it may fail as in ``compare``."""
    if isinstance(lhs, _CONTAINERS):
        _compare(tr, lhs, _MISSING, (), Comparison())


def _maps_v1(shape: tv.Shape, lhs: dict[str, Any], rhs: dict[str, Any],
             strip: Node | None = None) -> dict[str, Any]:
    fields, other = shape.fields, shape.other_fields
    for k, lv in lhs.items():
        if k not in rhs:
            _removed(fields.get(k, other), lv)
    out: dict[str, Any] = {}
    for k in sorted(rhs):
        rv, lv, pe = rhs[k], lhs.get(k, _MISSING), "f:" + k
        below = strip.get(pe) if strip is not None else None
        if below is not None and len(below) == 1 and MEMBER in below and not isinstance(
                rv, _CONTAINERS) and not isinstance(lv, _CONTAINERS):
            # a stripped leaf (name, uid, ...): _filtered drops whatever it would own, and a
            # scalar owns nothing beneath it and types without fail
            continue
        if lv is _MISSING:
            if isinstance(rv, _CONTAINERS):
                body = _added_v1(fields.get(k, other), rv)
                out[pe] = {MEMBER: {}, **body} if body else {}
            else:
                out[pe] = {}
            continue
        v1 = _v1(*_changed_v1(fields.get(k, other), lv, rv, False, below))
        if v1 is not None:
            out[pe] = v1
    return out


def _lists_v1(shape: tv.Shape, lhs: list[Any], rhs: list[Any]) -> dict[str, Any]:
    lidx = index_items(shape, lhs, ())
    ridx = index_items(shape, rhs, ())
    for pe, item in lidx.items():
        if pe not in ridx:
            _removed(shape.element, item)
    out: dict[str, Any] = {}
    repeated = repeated_keys(shape, rhs, ()) if not lidx else _NONE
    for pe in fp.sort_elements(ridx):
        item, li = ridx[pe], lidx.get(pe, _MISSING)
        if li is _MISSING:
            body = {} if pe in repeated else _added_v1(shape.element, item)
            out[pe] = {MEMBER: {}, **body} if body else {}
            continue
        v1 = _v1(*_changed_v1(shape.element, li, item))
        if v1 is not None:
            out[pe] = v1
    return out


def _filtered(body: dict[str, Any], ignored: Node | None,
              stripped: Node | None) -> dict[str, Any]:
    """Encoded ``body`` without the ignored members and all beneath them, and without the
    stripped members (their children stay); only where those sets reach is it walked."""
    if ignored is None and stripped is None:
        return body
    out: dict[str, Any] = {}
    for pe, child in body.items():
        ign = ignored.get(pe) if ignored is not None else None
        if ign is not None and MEMBER in ign:
            continue
        strip = stripped.get(pe) if stripped is not None else None
        if ign is None:
            if strip is None:
                out[pe] = child
                continue
            if len(strip) == 1 and MEMBER in strip:  # a stripped leaf (metadata.name...)
                if MEMBER not in child:
                    if child:
                        out[pe] = child
                elif len(child) > 1:
                    out[pe] = {k: v for k, v in child.items() if k != MEMBER}
                continue
        member = not child or MEMBER in child
        sub = _filtered({k: v for k, v in child.items() if k != MEMBER}, ign or None,
                        strip or None)
        v1 = _v1(member and (strip is None or MEMBER not in strip), sub)
        if v1 is not None:
            out[pe] = v1
    return out
