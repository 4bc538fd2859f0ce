"""Resource requirements written the way the API server stores them."""

from __future__ import annotations

from setpoint.machinery.quantity import canonical
from setpoint.resources.models.core_v1 import ResourceRequirements


def canonical_resources(resources: ResourceRequirements | None
                        ) -> ResourceRequirements | None:
    """``resources`` with every quantity in the canonical form the API server stores
    (``0.5`` is ``500m``, ``1024Mi`` is ``1Gi``): an operator that passes a spec's resources
    down to its pods then sees them in its cache exactly as it applied them, and no write
    repeats forever."""
    if resources is None:
        return None
    return resources.model_copy(update={
        "requests": {k: canonical(v) for k, v in resources.requests.items()}
        if resources.requests is not None else None,
        "limits": {k: canonical(v) for k, v in resources.limits.items()}
        if resources.limits is not None else None})
