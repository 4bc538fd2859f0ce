"""CEL type names and the standard library's operator overloads, as the checker of
celcheck.py resolves them (cel-go checker/types.go FormatCELType, checker/standard.go)."""

from __future__ import annotations

from .celcost import T

CEL_NAMES = {"null": "null_type", "timestamp": "google.protobuf.Timestamp",
             "duration": "google.protobuf.Duration",
             # the Kubernetes libraries' types (apiserver pkg/cel/{quantity,url,ip,cidr}.go)
             "quantity": "kubernetes.Quantity", "url": "kubernetes.URL", "ip": "net.IP",
             "cidr": "net.CIDR"}
PLAIN = frozenset({"bool", "int", "uint", "double", "string", "bytes", "null", "timestamp",
                   "duration", "list", "map", "optional", "quantity", "url", "ip", "cidr"})
# library/quantity.go: these take only a Quantity argument (add and sub also take an int)
QUANTITY_ONLY = frozenset({"compareTo", "isLessThan", "isGreaterThan"})
# library/lists.go comparableTypes and summableTypes: the element types each list function
# is declared for
LIST_ELEMENTS = {
    "sum": frozenset({"int", "uint", "double", "duration", "dyn"}),
    **dict.fromkeys(("isSorted", "min", "max"), frozenset({
        "int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes", "dyn"})),
}
NUMBERS = frozenset({"int", "uint", "double"})
SIZED = frozenset({"string", "bytes", "list", "map", "dyn"})
STRING_METHODS = frozenset({"contains", "startsWith", "endsWith", "matches", "lowerAscii",
                            "upperAscii", "trim"})
ORDERED = frozenset({"int", "uint", "double", "string", "bytes", "bool", "timestamp",
                     "duration"})
# the operator of each parse-tree node and the overload name cel-go reports for it
OPERATORS = {"relation_eq": ("==", "_==_"), "relation_ne": ("!=", "_!=_"),
             "relation_lt": ("<", "_<_"), "relation_le": ("<=", "_<=_"),
             "relation_gt": (">", "_>_"), "relation_ge": (">=", "_>=_"),
             "relation_in": ("in", "@in"), "addition_add": ("+", "_+_"),
             "addition_sub": ("-", "_-_"), "multiplication_mul": ("*", "_*_"),
             "multiplication_div": ("/", "_/_"), "multiplication_mod": ("%", "_%_")}


def cel_type_name(t: T) -> str | None:
    """``FormatCELType`` of ``t``; None where cel-go's name is not knowable here (object
    types are named after a per-compilation random type name by the apiserver)."""
    if t.kind == "dyn":
        return "dyn"
    if t.kind not in PLAIN:
        return None
    if t.kind == "list":
        elem = cel_type_name(t.elem or T("dyn"))
        return None if elem is None else f"list({elem})"
    if t.kind == "map":
        elem = cel_type_name(t.elem or T("dyn"))
        return None if elem is None else f"map(string, {elem})"
    if t.kind == "optional":
        elem = cel_type_name(t.elem or T("dyn"))
        return None if elem is None else f"optional_type({elem})"
    return CEL_NAMES.get(t.kind, t.kind)


def unifies(a: T, b: T) -> bool:
    """Whether one type parameter can stand for both (``_==_`` is ``(A, A) -> bool``)."""
    if "dyn" in (a.kind, b.kind) or "null" in (a.kind, b.kind):
        return True
    if a.kind != b.kind:
        return False
    if a.kind in ("list", "map", "optional"):
        return unifies(a.elem or T("dyn"), b.elem or T("dyn"))
    return True


def has_overload(op: str, left: T, right: T) -> bool:
    """Whether the CEL standard library declares ``op`` for these argument types."""
    if "dyn" in (left.kind, right.kind):
        return True
    if op in ("_==_", "_!=_"):
        return unifies(left, right)
    if op in ("_<_", "_<=_", "_>_", "_>=_"):
        return (left.kind == right.kind and left.kind in ORDERED) or \
            (left.kind in NUMBERS and right.kind in NUMBERS)
    if op == "@in":
        return right.kind in ("list", "map") and unifies(
            left, (right.elem or T("dyn")) if right.kind == "list" else T("string"))
    if op == "_+_":
        return (left.kind == right.kind and left.kind in (
            "int", "uint", "double", "string", "bytes", "duration")) or \
            (left.kind == right.kind == "list" and unifies(left, right)) or \
            {left.kind, right.kind} == {"timestamp", "duration"}
    if op == "_-_":
        return (left.kind == right.kind and left.kind in (
            "int", "uint", "double", "duration", "timestamp")) or \
            (left.kind, right.kind) == ("timestamp", "duration")
    if op in ("_*_", "_/_"):
        return left.kind == right.kind and left.kind in NUMBERS
    if op == "_%_":
        return left.kind == right.kind and left.kind in ("int", "uint")
    if op in ("_&&_", "_||_"):
        return left.kind == right.kind == "bool"
    return True


def is_free(t: T) -> bool:
    """A free type parameter, or an empty list or map literal (its element type one)."""
    return t.free or (t.kind in ("list", "map") and t.schema is None and t.size == 0)


def equivalent(a: T, b: T) -> bool:
    """cel-go Type.IsEquivalentType, as far as this checker knows the types."""
    if a.free or b.free:
        return True
    if a.kind != b.kind:
        return False
    if a.kind in ("list", "map", "optional"):
        if is_free(a) or is_free(b):
            return True
        return equivalent(a.elem or T("dyn"), b.elem or T("dyn"))
    if a.kind == "object":
        return a.schema is b.schema or a.schema == b.schema
    return True


def type_name(t: T) -> str:
    return cel_type_name(t) or t.kind


def optional_of(inner: T, cost: float | None = None) -> T:
    """``optional_type(inner)``; a dyn stays dyn."""
    if inner.kind in ("dyn", "optional"):
        return inner if cost is None else T(inner.kind, elem=inner.elem, cost=cost,
                                            free=inner.free)
    return T("optional", elem=T(inner.kind, inner.schema, inner.elem, inner.size, 0,
                                inner.fields), cost=inner.cost if cost is None else cost)
