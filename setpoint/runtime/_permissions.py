"""What a controller needs to be allowed: its declarations, as RBAC Permissions.

A controller says what it reconciles, owns, watches and reads; that is exactly what it may
do in a cluster. ``setpoint generate rbac`` and ``generate manifests`` turn these Permissions
into roles, and the testing kit's ``run_manager(..., rbac=True)`` runs an operator with them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from setpoint.resources._rbac import Permissions
from setpoint.runtime._objects import kind_key

__all__ = ["controller_permissions", "manager_permissions"]


def _resource(kind: Any) -> Any:
    """A Permissions target for a kind: typed classes as they are, others by name."""
    # here, not at the top: `_custom` loads pydantic and the models, which a manager that
    # never asks for its permissions (the cluster's workloads) need not load to start
    from setpoint.resources._custom import plural_of

    if isinstance(kind, type) and hasattr(kind, "plural"):
        return kind
    key = kind_key(kind)
    return (key.group, plural_of(key.kind))


def _has_status(kind: Any) -> bool:
    """Whether a controller of ``kind`` writes a status: a typed class says so (a status
    subresource, or at least a status field); an untyped kind is assumed to."""
    if not isinstance(kind, type):
        return True
    declaration = getattr(kind, "declaration", None)
    declared = getattr(declaration(), "status_subresource", None) if callable(declaration) \
        else None
    if declared is not None:
        return bool(declared)
    return "status" in getattr(kind, "model_fields", {})


def controller_permissions(controller: Any) -> Permissions:
    """What a controller's declarations imply, so that every call its Context offers is
    allowed: its primary kind in full (get/list/watch/create/update/patch/delete, update of
    ``<plural>/finalizers``, and get/update/patch of ``<plural>/status`` when it has a
    status), as kubebuilder's scaffold grants it; writes of the kinds it owns; reads of the
    kinds it watches or reads; events; plus what it adds with ``Controller.permits``."""
    watches, owns, status, owners = [], [], [], []
    for spec in controller.watch_specs:
        target = _resource(spec.kind)
        if spec.role in ("for", "owns"):
            # for: ctx.add_finalizer patches the object, ctx.apply/create_or_update/delete
            # may write it (controller-gen's scaffold: the seven verbs on the primary kind)
            owns.append(target)
        else:
            watches.append(target)
        if spec.role == "for":
            owners.append(target)
            if _has_status(spec.kind):
                status.append(target)
    watches += [_resource(k) for k in controller.read_kinds]
    derived = Permissions(watches=watches, owns=owns, writes_status=status, owners=owners,
                          events=True)
    declared = getattr(controller, "permissions", None)
    declared = declared() if callable(declared) else declared
    return derived | declared if isinstance(declared, Permissions) else derived


def manager_permissions(manager: Any) -> Permissions:
    """The controllers' permissions, in the manager's namespace (if it is limited to one),
    with events and leader election as its settings say."""
    settings = manager.settings
    merged = Permissions()
    for controller in manager.controllers:
        merged = merged | controller_permissions(controller)
    return dataclasses.replace(
        merged, events=settings.record_events, leader_election=settings.leader_election,
        namespaces=(settings.namespace,) if settings.namespace else None)


