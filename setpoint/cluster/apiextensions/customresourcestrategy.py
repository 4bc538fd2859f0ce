"""The strategy of custom resources where it differs from the generic one: the warnings a
new finalizer draws (apiextensions-apiserver pkg/registry/customresource/strategy.go
``generateWarningsFromObj`` and validator.go ``validateKubeFinalizerName``)."""

from __future__ import annotations

from setpoint.cluster.registry.strategy import Strategy
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.names import is_qualified_name
from setpoint.machinery.objects import Obj

_FIELD = "metadata.finalizers"
# validator.go standardFinalizers
STANDARD_FINALIZERS = frozenset({"orphan", "foregroundDeletion", "kubernetes"})


def finalizer_warnings(finalizer: str) -> list[str]:
    """``validateKubeFinalizerName``: the name's qualified-name problems, then, for a name
    without a path that is not a standard one, the advice to qualify it (with a path, when it
    already looks like a domain)."""
    out = [f"{_FIELD}: {go_quote(finalizer)}: {msg}" for msg in is_qualified_name(finalizer)]
    if "/" not in finalizer and finalizer not in STANDARD_FINALIZERS:
        advice = ("prefer a domain-qualified finalizer name including a path (/) to avoid "
                  "accidental conflicts with other finalizer writers" if "." in finalizer
                  else "prefer a domain-qualified finalizer name to avoid accidental "
                  "conflicts with other finalizer writers")
        out.append(f"{_FIELD}: {go_quote(finalizer)}: {advice}")
    return out


def added_finalizer_warnings(new: Obj, old: Obj | None) -> list[str]:
    """``generateWarningsFromObj``: each finalizer the write adds, once, in sorted order."""
    added = {f for f in new.get("metadata", {}).get("finalizers") or [] if isinstance(f, str)}
    if old is not None:
        added -= set(old.get("metadata", {}).get("finalizers") or [])
    return [w for finalizer in sorted(added) for w in finalizer_warnings(finalizer)]


class CustomResourceStrategy(Strategy):
    """Custom resources: the generic rules, and the finalizer warnings."""

    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]:
        return added_finalizer_warnings(obj, None)

    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]:
        return added_finalizer_warnings(new, old)
