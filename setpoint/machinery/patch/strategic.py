"""Strategic merge patch (``application/strategic-merge-patch+json``) for built-in kinds.

A port of the apply half of ``k8s.io/apimachinery/pkg/util/strategicpatch`` as the
kube-apiserver runs it (``StrategicMergeMapPatch`` with ``MergeParallelList`` and
``IgnoreUnmatchedNulls``), driven by the OpenAPI schema instead of Go struct tags: a field's
``x-kubernetes-patch-strategy`` and ``x-kubernetes-patch-merge-key`` carry exactly the
``patchStrategy`` and ``patchMergeKey`` tags the Go code reads. ``x-kubernetes-list-type`` is
deliberately ignored: strategic merge patch never looked at it.

Unlike the Go code, nothing here mutates its inputs. Maps are copied only along the paths the
patch touches; every other subtree of the result is shared with the original document.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.gofmt import format_v, go_equal
from setpoint.machinery.patch._lists import (
    DELETE,
    DIRECTIVE,
    MERGE,
    REPLACE,
    bad_format,
    dedupe_scalars,
    delete_from_slice,
    element_kind,
    err_bad_arg_type,
    err_bad_patch_type,
    err_no_merge_key,
    extract_to_delete_items,
    find_map_index,
    normalize_element_order,
    partition_maps,
    partition_primitives,
)
from setpoint.machinery.patch._status import unexplained
from setpoint.machinery.schema import Schema

RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"

ERR_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"

_LIST_TYPE = "[]interface {}"
_MAP_TYPE = "map[string]interface {}"


def strategic_merge_patch(doc: dict[str, Any], patch: Any, schema: Schema | None) -> dict[str, Any]:
    """Apply a strategic merge patch to ``doc`` and return the patched object.

    ``schema`` is the OpenAPI schema of the object's kind (``None``: no field has a patch
    strategy, so lists are replaced and maps merged). Directives: ``$patch`` (replace, merge,
    delete) on maps and list elements, ``$retainKeys``, ``$setElementOrder/<field>``,
    ``$deleteFromPrimitiveList/<field>``; ``null`` deletes a field.

    Raises ``StatusError`` as the kube-apiserver answers: 400 for a body that is not an object
    and for the malformed-directive errors, 422 for lists of lists, 500 (no reason) for the
    other errors apimachinery returns unconverted (an unknown ``$patch`` value, a missing
    merge key, ...). ``doc`` and ``patch`` are never modified; the result shares unchanged
    subtrees with ``doc``, so copy a subtree before changing it in place.
    """
    if patch is None:
        # the handler decodes `null` into an empty map: nothing to do
        return dict(doc)
    if not isinstance(patch, dict):
        raise bad_format(
            f"json: cannot unmarshal {unmarshal_kind(patch)} into Go value of type "
            "map[string]interface {}"
        )
    return _merge_map(doc, patch, schema)



# -- field metadata ----------------------------------------------------------------------------

def _field_meta(parent: Schema | None, key: str) -> tuple[Schema | None, str, str]:
    """The schema of field ``key``, its patch strategy (without retainKeys) and merge key."""
    field = parent.child(key) if parent is not None else None
    if field is None:
        # unknown to the schema: no strategy (the Go code only meets known fields here)
        return None, "", ""
    raw = field.patch_strategy
    strategies = raw.split(",") if raw else []
    return field, _patch_strategy(strategies), field.patch_merge_key or ""


def _patch_strategy(strategies: list[str]) -> str:
    """``extractRetainKeysPatchStrategy``: the merge/replace strategy beside retainKeys."""
    if not strategies:
        return ""
    if len(strategies) == 1:
        return "" if strategies[0] == "retainKeys" else strategies[0]
    if len(strategies) == 2 and "retainKeys" in strategies:
        return strategies[1] if strategies[0] == "retainKeys" else strategies[0]
    raise unexplained(f"unexpected patch strategy: [{' '.join(strategies)}]")


def _element_schema(field: Schema | None) -> Schema | None:
    return field.element() if field is not None and field.type == "array" else None


def _struct_name(schema: Schema | None) -> str:
    """What ``PatchMetaFromStruct.Name()`` says of a list's element type (its Go kind)."""
    if schema is not None and schema.additional_properties is not None and not schema.properties:
        return "map"
    return "struct"


# -- maps --------------------------------------------------------------------------------------

def _merge_map(
    original: dict[str, Any] | None, patch: dict[str, Any], schema: Schema | None
) -> dict[str, Any]:
    """``mergeMap``: merge ``patch`` into a copy of ``original``."""
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    out: dict[str, Any] = dict(original) if original else {}
    work = dict(patch)
    _apply_retain_keys(out, work)
    _merge_set_element_order(out, work, schema)

    for key, value in work.items():
        k = key
        is_delete_list = False
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            k = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST, ERR_BAD_PRIMITIVE_LIST)
            is_delete_list = True
        if value is None:
            out.pop(k, None)
            continue
        if k not in out:
            if not is_delete_list:
                cleaned, keep = _clean_new_value(value)
                if keep:
                    out[k] = cleaned
            continue
        current = out[k]
        if type(current) is not type(value):
            if not is_delete_list:
                cleaned, keep = _clean_new_value(value)
                if keep:
                    out[k] = cleaned
                else:
                    del out[k]
            continue
        if isinstance(current, dict):
            field, strategy, _ = _field_meta(schema, k)
            out[k] = value if strategy == REPLACE else _merge_map(current, value, field)
        elif isinstance(current, list):
            field, strategy, merge_key = _field_meta(schema, k)
            out[k] = _merge_list_field(current, value, field, strategy, merge_key, is_delete_list)
        else:
            out[k] = value
    return out


def _map_directive(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    """``$patch`` on a map: ``replace`` takes the patch as it is, ``delete`` empties the map."""
    if go_equal(directive, REPLACE):
        return {k: v for k, v in patch.items() if k != DIRECTIVE}
    if go_equal(directive, DELETE):
        return {}
    raise err_bad_patch_type(directive, patch)


def _apply_retain_keys(out: dict[str, Any], patch: dict[str, Any]) -> None:
    """``$retainKeys``: drop every live field not listed; the patch may only set listed ones."""
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise bad_format(ERR_BAD_RETAIN_KEYS)
    allowed = {v for v in retain if isinstance(v, str)}
    for k, v in patch.items():
        if v is None or k.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if k not in allowed:
            raise bad_format(ERR_BAD_RETAIN_KEYS)
    for k in [k for k in out if k not in allowed]:
        del out[k]


def _extract_key(key: str, prefix: str, error: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise bad_format(error)
    return rest


def _clean_new_value(value: Any, drop_nulls: bool = True) -> tuple[Any, bool]:
    """A patch value that lands where nothing was: directive maps removed, nulls dropped.

    Returns the cleaned copy and whether to keep it at all (a map carrying ``$patch`` is not
    kept). ``drop_nulls=False`` keeps null map values, as ``removeDirectives`` alone does.
    """
    if isinstance(value, dict):
        present = {k: v for k, v in value.items() if v is not None} if drop_nulls else value
        if DIRECTIVE in present:
            return None, False
        out: dict[str, Any] = {}
        for k, v in present.items():
            cleaned, keep = _clean_new_value(v, drop_nulls)
            if keep:
                out[k] = cleaned
        return out, True
    if isinstance(value, list):
        return _without_directives(value, drop_nulls), True
    return value, True


def _without_directives(items: list[Any], drop_nulls: bool) -> list[Any]:
    out: list[Any] = []
    for item in items:
        cleaned, keep = _clean_new_value(item, drop_nulls)
        if keep:
            out.append(cleaned)
    return out


# -- $setElementOrder --------------------------------------------------------------------------

def _merge_set_element_order(
    out: dict[str, Any], patch: dict[str, Any], schema: Schema | None
) -> None:
    """``mergePatchIntoOriginal``: merge each list that has a ``$setElementOrder`` and order it.

    The merged lists and their directives are removed from ``patch``.
    """
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise err_bad_arg_type(_LIST_TYPE, order)
        name = _extract_key(key, SET_ELEMENT_ORDER, ERR_BAD_SET_ELEMENT_ORDER)
        found_original, found_patch = name in out, name in patch
        original = out.get(name)
        patch_list = patch.get(name)
        if found_original and not isinstance(original, list):
            raise err_bad_arg_type(_LIST_TYPE, original)
        if found_patch and not isinstance(patch_list, list):
            raise err_bad_arg_type(_LIST_TYPE, patch_list)
        original_items: list[Any] = original if isinstance(original, list) else []
        patch_items: list[Any] = patch_list if isinstance(patch_list, list) else []
        field, strategy, merge_key = _field_meta(schema, name)
        _validate_set_order(patch_items, order, merge_key)

        if found_original and not found_patch:
            merged = original_items
        elif found_patch and not found_original:
            merged = _without_directives(patch_items, drop_nulls=False)
        elif found_original and found_patch:
            # Go's merge shifts and refills the live list's backing array in place, and the
            # order below is read from that array: replay it on a copy to order the same way
            server_order = list(original_items)
            merged = _merge_list_field(
                original_items, patch_items, field, strategy, merge_key, False, server_order
            )
        else:
            continue
        if not (found_original and found_patch):
            server_order = original_items

        if merge_key:
            in_order, server_only = partition_maps(merged, order, merge_key)
        else:
            in_order, server_only = partition_primitives(merged, order)
        kind = element_kind(original_items, patch_items)
        out[name] = normalize_element_order(
            in_order, server_only, order, server_order, merge_key, kind
        )
        patch.pop(name, None)


def _validate_set_order(patch_items: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch's items must appear in ``$setElementOrder`` in the same relative order."""
    if not order or not patch_items:
        return
    items = extract_to_delete_items(patch_items)[0] if merge_key else patch_items
    pi = si = 0
    while pi < len(items) and si < len(order):
        if isinstance(items[pi], dict) and DIRECTIVE in items[pi]:
            pi += 1
            continue
        if _merge_key_value_equal(items[pi], order[si], merge_key):
            pi += 1
        si += 1
    if pi < len(items) and si >= len(order):
        raise unexplained(
            f"The order in patch list:\n{format_v(patch_items)}\n doesn't match "
            f"{SET_ELEMENT_ORDER} list:\n{format_v(order)}\n"
        )


def _merge_key_value_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return go_equal(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise err_bad_arg_type(_MAP_TYPE, item)
        if merge_key not in item:
            raise err_no_merge_key(item, merge_key)
    return go_equal(left[merge_key], right[merge_key])


# -- lists -------------------------------------------------------------------------------------

def _merge_list_field(
    original: list[Any], patch: list[Any], field: Schema | None, strategy: str,
    merge_key: str, is_delete_list: bool, backing: list[Any] | None = None,
) -> list[Any]:
    """``mergeSliceHandler``: merge lists with strategy merge (or a deletion list), else replace.

    ``backing``, when given, is a copy of ``original`` that ends up as Go's backing array of
    the live list does after the merge (see ``_GoSlice``).
    """
    if strategy == MERGE or is_delete_list:
        element = _element_schema(field)
        return _merge_list(original, patch, element, merge_key, is_delete_list, backing)
    return patch


def _merge_list(
    original: list[Any], patch: list[Any], element: Schema | None, merge_key: str,
    is_delete_list: bool, backing: list[Any] | None = None,
) -> list[Any]:
    """``mergeSlice``: a union of primitives, or maps merged by ``merge_key``, ordered."""
    if not original and not patch:
        return original
    kind = element_kind(original, patch)
    if kind is not dict:
        if is_delete_list:
            return delete_from_slice(original, patch)
        merged = dedupe_scalars(original + patch)
    else:
        if not merge_key:
            raise unexplained(f"cannot merge lists without merge key for {_struct_name(element)}")
        live = _GoSlice(original, backing)
        original, patch = _apply_list_directives(live, patch, merge_key)
        merged = _merge_by_key(live, patch, merge_key, element)

    if merge_key:
        patch_items, server_only = partition_maps(merged, patch, merge_key)
    else:
        patch_items, server_only = partition_primitives(merged, patch)
    return normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


class _GoSlice:
    """A live list as Go's slice of it: deleting shifts the elements of a shared backing
    array left and appending refills the freed slots, which the caller still sees through
    its longer slice. ``backing`` (optional) is that array; without it, no one looks."""

    __slots__ = ("aliased", "backing", "items")

    def __init__(self, items: list[Any], backing: list[Any] | None) -> None:
        self.items = list(items)
        self.backing = backing
        self.aliased = backing is not None

    def delete(self, i: int) -> None:
        n = len(self.items)
        del self.items[i]
        if self.aliased and self.backing is not None:
            self.backing[i : n - 1] = self.backing[i + 1 : n]

    def set(self, i: int, value: Any) -> None:
        self.items[i] = value
        if self.aliased and self.backing is not None:
            self.backing[i] = value

    def append(self, value: Any) -> None:
        n = len(self.items)
        self.items.append(value)
        if self.aliased and self.backing is not None and n < len(self.backing):
            self.backing[n] = value
        else:
            # past the capacity Go moves to a new array: the caller's view stays as it is
            self.aliased = False

    def detach(self, items: list[Any]) -> None:
        """Continue on a list of the patch's own: nothing aliases the live array any more."""
        self.items = list(items)
        self.aliased = False


def _apply_list_directives(
    live: _GoSlice, patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """``mergeSliceWithSpecialElements``: act on ``$patch`` elements, return the rest.

    ``delete`` removes every live element with that key; ``replace`` makes the patch's plain
    elements the whole list. Returns the live list after deletions and the plain elements.
    """
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if go_equal(directive, DELETE):
            if merge_key not in item:
                raise err_no_merge_key(item, merge_key)
            doomed = item[merge_key]
            while (i := find_map_index(live.items, merge_key, doomed)) is not None:
                live.delete(i)
        elif go_equal(directive, REPLACE):
            replace = True
        elif go_equal(directive, MERGE):
            raise unexplained("merging lists cannot yet be specified in the patch")
        else:
            raise err_bad_patch_type(directive, item)
    if replace:
        live.detach(plain)
        return list(plain), []
    return list(live.items), plain


def _merge_by_key(
    live: _GoSlice, patch: list[Any], merge_key: str, element: Schema | None
) -> list[Any]:
    """``mergeSliceWithoutSpecialElements``: merge same-key maps, append the new ones."""
    for item in patch:
        if merge_key not in item:
            raise err_no_merge_key(item, merge_key)
        i = find_map_index(live.items, merge_key, item[merge_key])
        if i is None:
            live.append(item)
        else:
            live.set(i, _merge_map(live.items[i], item, element))
    return live.items
