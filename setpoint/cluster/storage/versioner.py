"""The storage's resourceVersion parsing (k8s.io/apiserver pkg/storage/
api_object_versioner.go, APIObjectVersioner): versions are etcd revisions, uint64s."""

from __future__ import annotations

import re

from setpoint.machinery import errors, fielderrors

_UINT64 = re.compile(r"[0-9]+")


def parse_uint_error(value: str) -> str:
    """strconv.ParseUint(value, 10, 64)'s error text, "" when it parses."""
    if _UINT64.fullmatch(value) is None:
        return f"strconv.ParseUint: parsing {fielderrors.go_quote(value)}: invalid syntax"
    if int(value) >= 1 << 64:
        return f"strconv.ParseUint: parsing {fielderrors.go_quote(value)}: value out of range"
    return ""


def object_resource_version(value: str) -> int:
    """``ObjectResourceVersion``: the resourceVersion of an object sent to be written, ""
    being 0. Anything but a uint64 is strconv's bare error, which the registry's store.go
    Update returns from its update function as is: no layer turns it into a Status, so
    kube-apiserver answers a 500 with no reason and strconv's words."""
    if not value:
        return 0
    why = parse_uint_error(value)
    if why:
        raise errors.StatusError(500, "", why)
    return int(value)
