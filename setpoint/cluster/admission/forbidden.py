"""``admission.NewForbidden``: the 403 an admission plugin answers with.

The object is named as k8s.io/apiserver pkg/admission/errors.go ``extractResourceName`` names
it: its name, or before naming its generateName prefix, or ``Unknown``.
"""

from __future__ import annotations

from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj


def new_forbidden(rt: ResourceType, obj: Obj, reason: str) -> errors.StatusError:
    """The plugin's refusal of ``obj`` for ``reason``."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    return errors.forbidden(rt.resource, name, reason, rt.group)
