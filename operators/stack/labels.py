"""The labels every object of the stack carries (the recommended ``app.kubernetes.io``
set), and the selectors built from them."""

from __future__ import annotations

from setpoint.resources import CustomResource

NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
PART_OF = "app.kubernetes.io/part-of"
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "stack-operator"


def labels(owner: CustomResource, name: str, component: str) -> dict[str, str]:
    return {NAME: name, INSTANCE: str(owner.metadata.name), COMPONENT: component,
            MANAGED_BY: OPERATOR}


def selector(owner: CustomResource, name: str) -> dict[str, str]:
    return {NAME: name, INSTANCE: str(owner.metadata.name)}
