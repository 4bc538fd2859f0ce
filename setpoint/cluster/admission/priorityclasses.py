"""The Priority admission plugin's check of PriorityClass writes: one global default.

plugin/pkg/admission/priority/admission.go ``Validate`` / ``validatePriorityClass``: a
PriorityClass created with ``globalDefault: true``, or another one updated to it, while a
global default exists is refused, 403 ``PriorityClass <name> is already marked as default.
Only one default can exist``. The existing default is ``getDefaultPriorityClass``'s: of
several (a race), the one with the lowest value. A validating plugin: it runs after the
object's validation and before the validating webhooks (store.go's ``createValidation`` /
``updateValidation``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Reader

PRIORITY_CLASSES = "scheduling.k8s.io/priorityclasses"


class PriorityClassDefault:
    """Refuses a second global default PriorityClass."""

    def __init__(self, store: Reader) -> None:
        self._store = store

    def __call__(self, attributes: Attributes) -> None:
        rt, pc = attributes.rt, attributes.obj
        if rt.is_custom or (rt.group, rt.kind) != ("scheduling.k8s.io", "PriorityClass"):
            return
        if pc.get("globalDefault") is not True:
            return
        default = default_priority_class(self._store)
        if default is None:
            return
        name = (pc.get("metadata") or {}).get("name") or ""
        default_name = default["metadata"]["name"]
        if attributes.operation == "CREATE" or default_name != name:
            raise errors.forbidden(
                rt.resource, name or "Unknown",
                f"PriorityClass {default_name} is already marked as default. "
                "Only one default can exist", rt.group)


def default_priority_class(store: Reader) -> Obj | None:
    """The global default PriorityClass; the lowest value wins if several claim it
    (plugin/pkg/admission/priority ``getDefaultPriorityClass``)."""
    chosen: Obj | None = None
    for pc in store.list(PRIORITY_CLASSES):
        if pc.get("globalDefault") is True and (
                chosen is None or int(pc.get("value") or 0) < int(chosen.get("value") or 0)):
            chosen = pc
    return chosen
