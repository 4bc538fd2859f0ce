"""The warnings every request through a deprecated served version of a CRD carries.

apiextensions-apiserver (``pkg/apiserver/customresource_handler.go``, ``getOrCreateServingInfoFor``
and ``defaultDeprecationWarning``): a version with ``deprecated: true`` warns with its
``deprecationWarning``, or else with ``<group>/<version> <Kind> is deprecated``, followed by
``; use <group>/<newer> <Kind>`` naming the highest-priority served, non-deprecated version
that is newer than it (by Kubernetes version priority). The handler adds the warning before
it serves any verb, so reads, writes, watches and their errors all carry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from setpoint.cluster.registry.served import version_priority


def deprecation_warnings(crd: Mapping[str, Any] | None, version: str) -> list[str]:
    """The warning texts for a request through ``version`` of ``crd`` (none if current)."""
    spec = (crd or {}).get("spec") or {}
    for v in spec.get("versions") or ():
        if v.get("name") != version or not v.get("deprecated"):
            continue
        if v.get("deprecationWarning") is not None:
            return [str(v["deprecationWarning"])]
        return [_default_warning(spec, version)]
    return []


def _default_warning(spec: Mapping[str, Any], deprecated: str) -> str:
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    msg = f"{group}/{deprecated} {kind} is deprecated"
    newer = sorted((v["name"] for v in spec.get("versions") or ()
                    if v.get("served") and not v.get("deprecated")
                    and version_priority(v["name"]) < version_priority(deprecated)),
                   key=version_priority)
    if newer:
        msg += f"; use {group}/{newer[0]} {kind}"
    return msg
