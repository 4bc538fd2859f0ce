"""Whether a schema declares ``x-kubernetes-validations`` anywhere.

The CEL machinery (``celpy``, its grammar, the Kubernetes CEL libraries) is loaded only for
schemas that do: most CRDs declare no rules, and loading it costs the server's event loop a
tenth of a second or more of CPU on the first CRD it sees (docs/benchmarks.md, start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def declares_validations(schema: Any) -> bool:
    """True when ``schema`` or a node under it (the nodes :class:`~.cel.RuleSet` compiles:
    properties, items, additionalProperties) has ``x-kubernetes-validations``."""
    if not isinstance(schema, Mapping):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and any(
            declares_validations(p) for p in properties.values()):
        return True
    return declares_validations(schema.get("items")) or \
        declares_validations(schema.get("additionalProperties"))
