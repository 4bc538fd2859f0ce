"""The diff ValidatePodUpdate appends to "pod updates may not change fields other than ..."
(kubernetes/kubernetes pkg/apis/core/validation/validation.go ``cmp.Diff(oldPod.Spec,
mungedPodSpec)`` over the internal ``core.PodSpec``), and the one
ValidatePersistentVolumeClaimUpdate appends to "spec is immutable after creation except ..."
(over ``core.PersistentVolumeClaimSpec``, which a PodSpec reaches too), as
github.com/google/go-cmp v0.6.0 prints it (setpoint.machinery.gocmp, deterministic form:
see gocmptext).

The Go types come from k8s.io/api v0.32.0 (podspec_gotypes.json, written by
tools/pod_spec_gotypes.py) made internal where core differs from v1: PodSpec's own field
order (pkg/apis/core/types.go) without ``DeprecatedServiceAccount``, the host namespaces
and ``HostUsers`` inside ``PodSecurityContext``, a projected token's ``ExpirationSeconds`` an
``int64``. A spec's JSON becomes the Go value a decode
gives; an empty list or map is nil (what the protobuf storage gives back). resource.Quantity
is its ``int64Amount`` fast path (ParseQuantity), ``s`` kept for a canonical string.
"""

from __future__ import annotations

import functools
import json
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from setpoint.machinery import gocmp
from setpoint.machinery.gocmp import GoType
from setpoint.machinery.objects import Obj

_DATA = Path(__file__).with_name("podspec_gotypes.json")

# pkg/apis/core/types.go PodSpec (1.32): v1's members in the internal order, by Go name
_INTERNAL_POD_SPEC = (
    "Volumes", "InitContainers", "Containers", "EphemeralContainers", "RestartPolicy",
    "TerminationGracePeriodSeconds", "ActiveDeadlineSeconds", "DNSPolicy", "NodeSelector",
    "ServiceAccountName", "AutomountServiceAccountToken", "NodeName", "SecurityContext",
    "ImagePullSecrets", "Hostname", "Subdomain", "SetHostnameAsFQDN", "Affinity",
    "SchedulerName", "Tolerations", "HostAliases", "PriorityClassName", "Priority",
    "PreemptionPolicy", "DNSConfig", "ReadinessGates", "RuntimeClassName", "Overhead",
    "EnableServiceLinks", "TopologySpreadConstraints", "OS", "SchedulingGates",
    "ResourceClaims", "Resources")
# ... and PodSecurityContext: the pod's host namespaces first (v1 keeps them in PodSpec)
_HOST_MEMBERS = (("HostNetwork", "hostNetwork", "bool"), ("HostPID", "hostPID", "bool"),
                 ("HostIPC", "hostIPC", "bool"),
                 ("ShareProcessNamespace", "shareProcessNamespace", "*bool"),
                 ("HostUsers", "hostUsers", "*bool"))

# members whose internal type is not v1's (pkg/apis/core/types.go)
_INTERNAL_TYPES = {("ServiceAccountTokenProjection", "ExpirationSeconds"): "int64"}

_INT = {"int32": GoType("int", "int32"), "int64": GoType("int", "int64")}
_BUILTIN = {"string": GoType("string"), "bool": GoType("bool"), **_INT}


def _same_quantity(x: Any, y: Any) -> bool:
    """``Quantity.Equal`` (``Cmp(v) == 0``): the same amount, whatever its text."""
    def amount(q: Any) -> Decimal:
        return Decimal(q["i"]["value"]).scaleb(q["i"]["scale"])
    return amount(x) == amount(y)


_QUANTITY = GoType("struct", "resource.Quantity", (
    ("i", GoType("struct", "resource.int64Amount", (
        ("value", _INT["int64"]), ("scale", GoType("int", "resource.Scale"))))),
    ("s", GoType("string")),
    ("Format", GoType("string", "resource.Format"))), equal=_same_quantity)
_INT_OR_STRING = GoType("struct", "intstr.IntOrString", (
    ("Type", GoType("int", "intstr.Type")), ("IntVal", _INT["int32"]),
    ("StrVal", GoType("string"))))
_LABEL_SELECTOR_REQUIREMENT = GoType("struct", "v1.LabelSelectorRequirement", (
    ("Key", GoType("string")), ("Operator", GoType("string", "v1.LabelSelectorOperator")),
    ("Values", GoType("slice", elem=GoType("string")))))
_LABEL_SELECTOR = GoType("struct", "v1.LabelSelector", (
    ("MatchLabels", GoType("map", key=GoType("string"), elem=GoType("string"))),
    ("MatchExpressions", GoType("slice", elem=_LABEL_SELECTOR_REQUIREMENT))))
_FOREIGN = {"resource.Quantity": _QUANTITY, "intstr.IntOrString": _INT_OR_STRING,
            "metav1.LabelSelector": _LABEL_SELECTOR}
_JSON_NAMES: dict[GoType, dict[str, tuple[str, bool]]] = {}


@functools.cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_DATA.read_bytes())
    return data


def _members(name: str) -> list[tuple[str, str, str, bool]]:
    """(Go name, JSON name, Go type, inline) of core ``name``, made internal."""
    members = [(f[0], f[1], _INTERNAL_TYPES.get((name, f[0]), f[2]), f[3] == "inline")
               for f in _table()["structs"][name]]
    if name == "PodSpec":
        by_name = {m[0]: m for m in members}
        return [by_name[n] for n in _INTERNAL_POD_SPEC]
    if name == "PodSecurityContext":
        return [(g, j, t, False) for g, j, t in _HOST_MEMBERS] + members
    return members


@functools.cache
def go_type(expr: str) -> GoType:
    """The GoType of a type expression of core/v1 (``[]Container``, ``*int64``, ...)."""
    if expr.startswith("*"):
        return GoType("ptr", elem=go_type(expr[1:]))
    if expr.startswith("[]"):
        return GoType("slice", elem=go_type(expr[2:]))
    if expr.startswith("map["):
        key, elem = expr[4:].split("]", 1)
        return GoType("map", key=go_type(key), elem=go_type(elem))
    if expr in _BUILTIN:
        return _BUILTIN[expr]
    if expr in _FOREIGN:
        return _FOREIGN[expr]
    if expr == "ResourceList":
        return GoType("map", "core.ResourceList", key=go_type("ResourceName"),
                      elem=_QUANTITY)
    named = _table()["named"].get(expr)
    if named is not None:
        base = _BUILTIN[named]
        # core.ResourceName has a String method, which go-cmp prints as s"..."
        return GoType(base.kind, f"core.{expr}", stringer=expr == "ResourceName")
    members = _members(expr)
    t = GoType("struct", f"core.{expr}",
               tuple((go_name, go_type(go)) for go_name, _, go, _ in members))
    _JSON_NAMES[t] = {go_name: (json_name, inline) for go_name, json_name, _, inline
                      in members}
    return t


def go_value(t: GoType, value: Any) -> Any:
    """The Go value decoding ``value`` (JSON) into ``t`` gives."""
    if t.kind == "struct":
        if t is _QUANTITY:
            return _quantity(value)
        if t is _INT_OR_STRING:
            is_str = isinstance(value, str)
            return {"Type": 1 if is_str else 0, "IntVal": 0 if is_str else int(value or 0),
                    "StrVal": value if is_str else ""}
        obj = value if isinstance(value, dict) else {}
        names = _JSON_NAMES.get(t, {})
        out: dict[str, Any] = {}
        for go_name, ft in t.fields:
            json_name, inline = names.get(go_name, (go_name[:1].lower() + go_name[1:], False))
            out[go_name] = go_value(ft, obj if inline else obj.get(json_name))
        return out
    if value is None:
        return gocmp.zero(t)
    if t.kind == "ptr":
        return (go_value(t.elem or GoType("int"), value),)
    if t.kind == "slice":  # (a value of another JSON type than the member's: nil)
        return [go_value(t.elem or GoType("int"), v) for v in value] \
            if isinstance(value, list) and value else None
    if t.kind == "map":
        return {str(k): go_value(t.elem or GoType("int"), v) for k, v in value.items()} \
            if isinstance(value, dict) and value else None
    if t.kind == "string":
        return value if isinstance(value, str) else str(value)
    if t.kind == "bool":
        return value is True
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_QUANTITY_TEXT = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(.*)$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
            "E": 18}


def _quantity(value: Any) -> dict[str, Any]:
    """ParseQuantity's int64Amount fast path (apimachinery pkg/api/resource quantity.go):
    value and scale, and the string kept when it is canonical."""
    text = str(value if value is not None else "0").strip()
    m = _QUANTITY_TEXT.match(text)
    sign, num, denom, suffix = (m.groups() if m else ("", "0", "", ""))
    denom = denom or ""
    fmt, scale, shift = "DecimalSI", 0, 0
    if suffix in _BINARY:
        fmt, shift = "BinarySI", _BINARY[suffix]
    elif suffix in _DECIMAL:
        scale = _DECIMAL[suffix]
    elif suffix[:1] in ("e", "E"):
        fmt = "DecimalExponent"
        try:
            scale = int(suffix[1:])
        except ValueError:
            scale = 0
    keep = False
    digits = (num + denom) or "0"
    if fmt == "BinarySI":
        number = int(digits) << shift if not denom else int(Decimal(f"{num}.{denom}") * (
            1 << shift))
        keep = shift % 10 == 0 and (int(digits) & 7) != 0
    else:
        scale -= len(denom)
        try:
            number = int(Decimal(digits))
        except InvalidOperation:
            number = 0
        keep = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
    if sign == "-":
        number = -number
    return {"i": {"value": number, "scale": scale}, "s": text if keep else "", "Format": fmt}


def pod_spec_diff(old_spec: Obj, new_spec: Obj) -> str:
    """``cmp.Diff(oldPod.Spec, mungedPodSpec)`` for two pod specs given as JSON."""
    t = go_type("PodSpec")
    return gocmp.diff(t, go_value(t, old_spec), go_value(t, new_spec))


def claim_spec_diff(old_spec: Obj, new_spec: Obj) -> str:
    """``cmp.Diff(oldPvcClone.Spec, newPvcClone.Spec)`` of ValidatePersistentVolumeClaimUpdate
    for two claim specs given as JSON (the internal ``core.PersistentVolumeClaimSpec`` has
    v1's members in v1's order)."""
    t = go_type("PersistentVolumeClaimSpec")
    return gocmp.diff(t, go_value(t, old_spec), go_value(t, new_spec))
