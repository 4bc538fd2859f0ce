"""What every pod of an instance gets from its spec: resources, node selector, tolerations."""

from __future__ import annotations

from operators.stack.resources import Placement
from setpoint.machinery.quantity import canonical
from setpoint.resources.models.core_v1 import Container, PodSpec, ResourceRequirements, Volume


def container_resources(spec: Placement) -> ResourceRequirements | None:
    """The spec's resources with quantities as the API server stores them (``0.5`` is
    ``500m``), so that the cache shows them as applied and no write repeats."""
    resources = spec.resources
    if resources is None:
        return None
    return resources.model_copy(update={
        "requests": {k: canonical(v) for k, v in resources.requests.items()}
        if resources.requests is not None else None,
        "limits": {k: canonical(v) for k, v in resources.limits.items()}
        if resources.limits is not None else None})


def pod_spec(spec: Placement, container: Container, volumes: list[Volume] | None = None
             ) -> PodSpec:
    # the scheduling intent reaches every pod: the stack is placed as one unit
    return PodSpec(containers=[container], node_selector=spec.node_selector,
                   tolerations=spec.tolerations, volumes=volumes)
