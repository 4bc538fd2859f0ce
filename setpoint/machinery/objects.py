"""The one shape every Kubernetes object has inside Setpoint before it is typed: the JSON
object the wire carried, decoded to a dict (``map[string]interface{}`` in Go's
``unstructured.Unstructured``). Server, SDK and workloads all pass objects this way, so the
alias lives at the bottom layer and means the same thing everywhere."""

from typing import Any, TypeAlias

__all__ = ["Obj"]

Obj: TypeAlias = dict[str, Any]
