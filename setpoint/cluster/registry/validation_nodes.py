"""Node validation (pkg/apis/core/validation/validation.go ``ValidateNode``,
``ValidateNodeUpdate``), as pkg/registry/core/node/strategy.go runs it: a create and an
update through the main resource get both (an update's status is the stored one), a
``/status`` write gets only ``ValidateNodeUpdate`` — which still checks the status.

Nodes may carry a status from their creation on, so capacity and allocatable quantities
are checked then too. Address types and conditions are not validated by Kubernetes; only
a repeated address is refused.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity, try_from_json

NON_NEGATIVE = "must be greater than or equal to 0"
NOT_INTEGER = "must be an integer"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NOT_A_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
POD_CIDR_CHANGE = 'node updates may not change podCIDR except from "" to valid'

# pkg/apis/core/helper/helpers.go integerResources: counted, never fractional
_INTEGER_RESOURCES = frozenset((
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"))


def is_extended_resource_name(name: str) -> bool:
    """``helper.IsExtendedResourceName``: a domain-prefixed name outside kubernetes.io that
    is still a qualified name once quota's ``requests.`` prefix is put before it."""
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests."):
        return False
    return not names.is_qualified_name(f"requests.{name}")


def go_quantity(q: Quantity, text: str) -> fe.GoValue:
    """``%#v`` of a resource.Quantity (a value type: its String method is not used)."""
    milli = q.milli_value()
    value, scale = (milli // 1000, 0) if milli % 1000 == 0 else (milli, -3)
    return fe.GoValue(
        f"resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, "
        f"d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{fe.go_quote(text)}, "
        f'Format:"{q.format}"}}')


def validate_resource_quantity_value(resource: str, value: Any, path: str) -> list[Cause]:
    """``ValidateResourceQuantityValue``: not negative, and whole for counted resources.
    (An unparsable quantity never gets here: decoding refuses it.)"""
    q = try_from_json(value)
    if q is None:
        return []
    causes = []
    if q.sign() < 0:
        causes.append(fe.invalid(path, str(q), NON_NEGATIVE))
    if (resource in _INTEGER_RESOURCES or is_extended_resource_name(resource)) \
            and q.milli_value() % 1000:
        causes.append(fe.invalid(path, go_quantity(q, str(q)), NOT_INTEGER))
    return causes


def _resources(status: Obj) -> list[Cause]:
    """``ValidateNodeResources``: capacity, then allocatable."""
    causes: list[Cause] = []
    for key in ("capacity", "allocatable"):
        for resource, value in (status.get(key) or {}).items():
            causes += validate_resource_quantity_value(resource, value,
                                                       f"status.{key}.{resource}")
    return causes


def _go_taint(taint: Obj) -> fe.GoValue:
    added = "(*v1.Time)(nil)" if not taint.get("timeAdded") else fe.go_pointer("v1.Time", True)
    return fe.GoValue(f"core.Taint{{Key:{fe.go_quote(str(taint.get('key') or ''))}, "
                      f"Value:{fe.go_quote(str(taint.get('value') or ''))}, "
                      f"Effect:{fe.go_quote(str(taint.get('effect') or ''))}, "
                      f"TimeAdded:{added}}}")


def _taints(taints: list[Any]) -> list[Cause]:
    """``validateNodeTaints``, handed the metadata path as the real code is: the causes
    read ``metadata.taints[i]``."""
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        if not isinstance(taint, dict):
            continue
        at = f"metadata.taints[{i}]"
        key, value = str(taint.get("key") or ""), str(taint.get("value") or "")
        effect = str(taint.get("effect") or "")
        causes.extend(fe.invalid(f"{at}.key", key, m) for m in names.is_qualified_name(key))
        errs = names.is_valid_label_value(value)
        if errs:
            causes.append(fe.invalid(f"{at}.value", value, ";".join(errs)))
        if not effect:
            causes.append(fe.required(f"{at}.effect"))
        elif effect not in TAINT_EFFECTS:
            causes.append(fe.not_supported(f"{at}.effect", effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            dup = fe.duplicate(at, _go_taint(taint))
            causes.append(Cause(dup.reason, dup.message
                                + ": taints must be unique by key and effect pair", dup.field))
            continue
        seen.add((key, effect))
    return causes


def _valid_cidr(value: str) -> bool:
    """``netutils.ParseCIDRSloppy``: an address (IPv4 parts may carry leading zeros) and a
    prefix length."""
    address, slash, bits = value.partition("/")
    ip = parse_ip_sloppy(address)
    if not slash or ip is None or not bits.isascii() or not bits.isdigit():
        return False
    try:
        ipaddress.ip_network(f"{ip}/{int(bits)}", strict=False)
    except ValueError:
        return False
    return True


def _pod_cidrs(cidrs: list[Any]) -> list[Cause]:
    path = "spec.podCIDRs"
    values = [str(c) for c in cidrs]
    causes = [fe.invalid(f"{path}[{i}]", v, NOT_A_CIDR)
              for i, v in enumerate(values) if not _valid_cidr(v)]
    if len(values) > 1:
        families = {":" in v.partition("/")[0] for v in values if _valid_cidr(v)}
        if any(not _valid_cidr(v) for v in values):
            causes.append(fe.internal(path, "invalid PodCIDRs. failed to check with dual "
                                            "stack with error:invalid CIDR"))
        if len(families) < 2 or len(values) > 2:
            causes.append(fe.invalid(path, fe.go_string_slice(values),
                                     "may specify no more than one CIDR for each IP family"))
        seen: set[str] = set()
        for i, v in enumerate(values):
            if v in seen:
                causes.append(fe.duplicate(f"{path}[{i}]", v))
            seen.add(v)
    return causes


def validate_node(node: Obj) -> list[Cause]:
    """``ValidateNode`` past its ObjectMeta check (the caller's): spec taints, status
    quantities, pod CIDRs."""
    spec = node.get("spec") or {}
    causes = _taints(spec.get("taints") or [])
    causes += _resources(node.get("status") or {})
    return causes + _pod_cidrs(spec.get("podCIDRs") or [])


def validate_node_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateNodeUpdate`` past its ``ValidateObjectMetaUpdate`` (the caller's)."""
    status, spec, old_spec = new.get("status") or {}, new.get("spec") or {}, old.get(
        "spec") or {}
    causes = _resources(status)
    seen: set[tuple[str, str]] = set()
    for i, address in enumerate(status.get("addresses") or []):
        if not isinstance(address, dict):
            continue
        pair = (str(address.get("type") or ""), str(address.get("address") or ""))
        if pair in seen:
            causes.append(fe.duplicate(f"status.addresses[{i}]", fe.GoValue(
                f"core.NodeAddress{{Type:{fe.go_quote(pair[0])}, "
                f"Address:{fe.go_quote(pair[1])}}}")))
        seen.add(pair)
    old_cidrs, new_cidrs = old_spec.get("podCIDRs") or [], spec.get("podCIDRs") or []
    if old_cidrs:
        if len(old_cidrs) != len(new_cidrs):
            causes.append(fe.forbidden("spec.podCIDRs", POD_CIDR_CHANGE))
        else:
            causes.extend(fe.forbidden("spec.podCIDRs", POD_CIDR_CHANGE)
                          for a, b in zip(old_cidrs, new_cidrs, strict=True) if a != b)
    old_provider = old_spec.get("providerID") or ""
    if old_provider and old_provider != (spec.get("providerID") or ""):
        causes.append(fe.forbidden(
            "spec.providerID", 'node updates may not change providerID except from "" to valid'))
    causes += _taints(spec.get("taints") or [])
    if (spec.get("externalID") or "") != (old_spec.get("externalID") or ""):
        causes.append(fe.forbidden("spec.externalID", "may not be updated"))
    return causes
