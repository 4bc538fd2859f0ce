"""A DaemonSet's template generation. The internal ``DaemonSetSpec.TemplateGeneration`` has
no apps/v1 field: kubernetes v1.32 pkg/apis/apps/v1/conversion.go carries it in the
``deprecated.daemonset.template.generation`` annotation, written on every object served
(``Convert_apps_DaemonSet_To_v1_DaemonSet``) and read back from every object received.
pkg/registry/apps/daemonset/strategy.go starts it at 1 and moves it exactly when the pod
template changes; ``ValidateDaemonSetSpecUpdate`` refuses a client's other moves."""

from __future__ import annotations

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
PATH = "spec.templateGeneration"


def template_generation(obj: Obj) -> int:
    """The annotation's value (0 when absent, as the conversion leaves the field)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _set(obj: Obj, generation: int) -> None:
    meta = obj.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}),
                           TEMPLATE_GENERATION: str(generation)}


def prepare_for_create(obj: Obj) -> None:
    """``PrepareForCreate``: at least 1."""
    _set(obj, max(template_generation(obj), 1))


def prepare_for_update(new: Obj, old: Obj) -> None:
    """``PrepareForUpdate``: a changed template takes the stored generation plus one; an
    unchanged one keeps what the client sent."""
    if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
        _set(new, template_generation(old) + 1)
    else:
        _set(new, template_generation(new))


def validate_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateDaemonSetSpecUpdate``."""
    new_gen, old_gen = template_generation(new), template_generation(old)
    changed = (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template")
    causes = []
    if new_gen < old_gen:
        causes.append(fe.invalid(PATH, new_gen, "must not be decremented"))
    if new_gen == old_gen and changed:
        causes.append(fe.invalid(PATH, new_gen, "must be incremented upon template update"))
    elif new_gen > old_gen and not changed:
        causes.append(fe.invalid(PATH, new_gen,
                                 "must not be incremented without template update"))
    return causes
