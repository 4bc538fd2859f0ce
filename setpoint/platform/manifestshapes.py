"""A manifest's object checked against its kind's typed model before the checks read it.

The maturity checks read manifests by kind and trust the fields they read to have the
kind's types, as objects read from a cluster do (the API server decoded them). A file can
hold anything: a Deployment whose ``containers`` is a number would otherwise fail deep in a
check with a Python traceback. kubectl refuses such a file when it decodes it; so does this,
with the field's path, through the SDK's typed models of the built-in kinds.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from setpoint.resources import models
from setpoint.resources.models import ObjectMeta

# what a typed model takes besides the kind's own fields (its header is the kind's, which
# the checks go by whatever the apiVersion)
_HEADER = ("apiVersion", "kind")


def shape_error(obj: dict[str, Any]) -> str | None:
    """Why ``obj`` is not of its kind's shape (the first field path and problem), or None."""
    kind = obj.get("kind")
    found = getattr(models, kind, None) if isinstance(kind, str) else None
    model: Any = found if isinstance(found, type) and hasattr(found, "api_version") else None
    body = {k: v for k, v in obj.items() if k not in _HEADER}
    try:
        if model is not None:
            model.model_validate(body)
        else:  # a custom resource: only its metadata has a known shape
            ObjectMeta.model_validate(body.get("metadata") or {})
            if not isinstance(body.get("metadata") or {}, dict):
                return "metadata: not a mapping"
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the object)"
        if model is None:
            where = f"metadata.{where}" if first["loc"] else "metadata"
        return f"{where}: {first['msg']}"
    return None
