"""List handling of the strategic merge patch: element kinds, partitions and element order.

Ports of the list helpers of ``k8s.io/apimachinery/pkg/util/strategicpatch``. The order a merged
list comes out in is part of the API (``kubectl`` users see it), so these follow apimachinery
step by step: patch items keep the patch's order, server-only items keep the live order, and
the two are interleaved by ``_merge_sorted``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from setpoint.machinery.errors import StatusError, bad_request
from setpoint.machinery.gofmt import format_s, format_v, go_equal, type_name
from setpoint.machinery.patch._go import stable_sort
from setpoint.machinery.patch._status import unexplained, unprocessable

DIRECTIVE = "$patch"
DELETE = "delete"
REPLACE = "replace"
MERGE = "merge"

ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"
_MAP_TYPE = "map[string]interface {}"


# -- apimachinery's error values ---------------------------------------------------------------

def err_no_merge_key(m: dict[str, Any], key: str) -> StatusError:
    return unexplained(f"map: {format_v(m)} does not contain declared merge key: {key}")


def err_bad_arg_type(expected: str, actual: Any) -> StatusError:
    return unexplained(f"expected a {expected}, but received a {type_name(actual)}")


def err_bad_patch_type(directive: Any, m: dict[str, Any]) -> StatusError:
    return unexplained(f"unknown patch type: {format_s(directive)} in map: {format_v(m)}")


def element_kind(*lists: Sequence[Any]) -> type:
    """``sliceElementType``: the one Python type of every element of ``lists``.

    Lists of lists are refused (422 in the handler), mixed element types and empty input are
    plain errors, as in apimachinery.
    """
    found: type | None = None
    for lst in lists:
        for v in lst:
            if found is None:
                found = type(v)
                if found is list:
                    raise unprocessable_list_of_lists()
            elif type(v) is not found:
                text = format_v([list(x) for x in lists])
                raise unexplained(f"list element types are not identical: {text}")
    if found is None:
        raise unexplained("no elements in any of the given slices")
    return found


def unprocessable_list_of_lists() -> StatusError:
    """``mergepatch.ErrNoListOfLists``, which the patch handler answers with the generic 422."""
    return unprocessable()


def bad_format(message: str) -> StatusError:
    """One of the malformed-patch sentinels the handler answers with 400 BadRequest."""
    return bad_request(message)


# -- lookups -----------------------------------------------------------------------------------

def find_map_index(items: Sequence[Any], key: str, value: Any) -> int | None:
    """``findMapInSliceBasedOnKeyValue``: the first map whose ``key`` equals ``value``."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise unexplained(f"value for key {i} is not a map.")
        if key in item and go_equal(item[key], value):
            return i
    return None


class _Index:
    """``index()`` of apimachinery: position of an item in ``order`` (by merge key for maps)."""

    __slots__ = ("_by_value", "_key", "_values")

    def __init__(self, order: Sequence[Any], merge_key: str, maps: bool) -> None:
        self._key = merge_key if maps else None
        self._values = [self._value(v) for v in order]
        self._by_value: dict[tuple[type, Hashable], int] | None = {}
        for i, v in enumerate(self._values):
            if not isinstance(v, Hashable):
                self._by_value = None
                break
            self._by_value.setdefault((type(v), v), i)

    def _value(self, item: Any) -> Any:
        if self._key is None:
            return item
        return item.get(self._key) if isinstance(item, dict) else None

    def __call__(self, item: Any) -> int:
        v = self._value(item)
        if self._by_value is not None and isinstance(v, Hashable):
            return self._by_value.get((type(v), v), -1)
        for i, candidate in enumerate(self._values):
            if go_equal(candidate, v):
                return i
        return -1


# -- partitions --------------------------------------------------------------------------------

def partition_primitives(
    merged: Sequence[Any], by: Sequence[Any]
) -> tuple[list[Any], list[Any]]:
    """Split ``merged`` into the items present in ``by`` and the others, keeping order."""
    index = _Index(by, "", maps=False)
    inside: list[Any] = []
    outside: list[Any] = []
    for v in merged:
        (inside if index(v) >= 0 else outside).append(v)
    return inside, outside


def partition_maps(
    merged: Sequence[Any], by: Sequence[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Split ``merged`` maps into those whose merge key occurs in ``by`` and the others."""
    inside: list[Any] = []
    outside: list[Any] = []
    for v in merged:
        if not isinstance(v, dict):
            raise err_bad_arg_type(_MAP_TYPE, v)
        if merge_key not in v:
            raise err_no_merge_key(v, merge_key)
        found = find_map_index(by, merge_key, v[merge_key]) is not None
        (inside if found else outside).append(v)
    return inside, outside


def extract_to_delete_items(items: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Split patch items into those kept and those carrying ``$patch: delete``."""
    keep: list[Any] = []
    delete: list[Any] = []
    for v in items:
        if not isinstance(v, dict):
            raise err_bad_arg_type(_MAP_TYPE, v)
        if DIRECTIVE in v and go_equal(v[DIRECTIVE], DELETE):
            delete.append(v)
        else:
            keep.append(v)
    return keep, delete


def dedupe_scalars(items: Sequence[Any]) -> list[Any]:
    """apimachinery's in-place dedupe: a duplicate's slot is refilled from the end."""
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if go_equal(s[i], s[j]):
                s[j] = s[length]
                del s[length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def delete_from_slice(current: Sequence[Any], to_delete: Sequence[Any]) -> list[Any]:
    """``$deleteFromPrimitiveList``: every item of ``current`` not in ``to_delete``."""
    index = _Index(to_delete, "", maps=False)
    return [v for v in current if index(v) < 0]


# -- order -------------------------------------------------------------------------------------

def _validate_merge_keys(merge_key: str, *lists: Sequence[Any]) -> None:
    for lst in lists:
        for item in lst:
            if not isinstance(item, dict):
                raise err_bad_arg_type(_MAP_TYPE, item)
            if merge_key not in item:
                raise err_no_merge_key(item, merge_key)


def _normalize_slice_order(
    to_sort: list[Any], order: Sequence[Any], merge_key: str, maps: bool
) -> list[Any]:
    """Sort ``to_sort`` by position in ``order``; deletions go last, as apimachinery puts them."""
    to_delete: list[Any] = []
    if maps:
        _validate_merge_keys(merge_key, to_sort, order)
        to_sort, to_delete = extract_to_delete_items(to_sort)
    index = _Index(order, merge_key, maps)
    positions = [index(v) for v in to_sort]
    if all(p >= 0 for p in positions):
        # a strict weak order: every stable sort agrees with Go's
        ranked = sorted(range(len(to_sort)), key=positions.__getitem__)
        result = [to_sort[i] for i in ranked]
    else:
        result = stable_sort(to_sort, _less_by(index))
    return result + to_delete


def _less_by(index: Callable[[Any], int]) -> Callable[[Any, Any], bool]:
    def less(a: Any, b: Any) -> bool:
        ia = index(a)
        if ia >= 0:
            ib = index(b)
            if ib >= 0:
                return ia < ib
        # apimachinery's comparison answers "less" for anything it cannot place
        return True

    return less


def _merge_sorted(
    left: Sequence[Any], right: Sequence[Any], server_order: Sequence[Any], merge_key: str,
    maps: bool,
) -> list[Any]:
    """Interleave server-only items (``left``) into patch items (``right``) by live order."""
    index = _Index(server_order, merge_key, maps)
    out: list[Any] = []
    i = j = 0
    while i < len(left) and j < len(right):
        li, ri = index(left[i]), index(right[j])
        if li >= 0 and ri >= 0 and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


def normalize_element_order(
    patch_items: list[Any], server_only: list[Any], patch_order: Sequence[Any],
    server_order: Sequence[Any], merge_key: str, kind: type,
) -> list[Any]:
    """The final order of a merged list: patch order for patch items, live order for the rest."""
    maps = kind is dict
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, maps)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, maps)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, maps)
