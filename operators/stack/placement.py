"""What every pod of an instance gets from its spec: resources, node selector, tolerations."""

from __future__ import annotations

from operators.stack.resources import Placement
from setpoint.resources.models.core_v1 import Container, PodSpec, Volume


def pod_spec(spec: Placement, container: Container, volumes: list[Volume] | None = None
             ) -> PodSpec:
    # the scheduling intent reaches every pod: the stack is placed as one unit
    return PodSpec(containers=[container], node_selector=spec.node_selector,
                   tolerations=spec.tolerations, volumes=volumes)
