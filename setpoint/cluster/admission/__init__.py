"""The built-in admission chain: steps every write passes after defaulting, before validation.

Each plugin is a callable ``(operation, resource type, object, old object)`` that may mutate
the object or raise a StatusError, as the apiserver's mutating and validating admission
plugins do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer


def install(api: APIServer) -> None:
    from setpoint.cluster.admission import crd, lifecycle, pods, rbacescalation, services

    api.rest.delete_admission.append(lifecycle.check_namespace_delete)
    api.rest.admission.extend([
        lifecycle.NamespaceLifecycle(api),
        pods.PodDefaults(api),
        services.ServiceAllocation(api),
        crd.validate_definition,
        rbacescalation.EscalationCheck(api),
    ])
