"""The Priority admission plugin's check of PriorityClass writes: one global default.

plugin/pkg/admission/priority/admission.go ``Validate`` / ``validatePriorityClass``: a
PriorityClass created with ``globalDefault: true``, or another one updated to it, while a
global default exists is refused, 403 ``PriorityClass <name> is already marked as default.
Only one default can exist``. The existing default is ``getDefaultPriorityClass``'s: of
several (a race), the one with the lowest value. A validating plugin: it runs after the
object's validation and before the validating webhooks (store.go's ``createValidation`` /
``updateValidation``).

The plugin reads PriorityClasses from its lister (``NewPlugin``'s shared informer), not the
store: :class:`DefaultPriorityClass` keeps the global default the same way, found again only
after a PriorityClass write, so a pod's admission reads no PriorityClass at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Event, Informer, Reader

PRIORITY_CLASSES = "scheduling.k8s.io/priorityclasses"


class DefaultPriorityClass:
    """The global default PriorityClass as a lister sees it: looked up once, and again
    only after a PriorityClass was written (the store calls its listeners inside each
    write, so it is never stale). Callers only read what it gives."""

    def __init__(self, store: Informer) -> None:
        self._store = store
        self._default: Obj | None = None
        self._known = False
        store.add_listener(self._forget, (PRIORITY_CLASSES,))

    def __repr__(self) -> str:
        return f"DefaultPriorityClass(known={self._known})"

    def _forget(self, event: Event) -> None:
        self._known = False

    def get(self) -> Obj | None:
        if not self._known:
            self._default, self._known = default_priority_class(self._store), True
        return self._default


class PriorityClassDefault:
    """Refuses a second global default PriorityClass."""

    def __init__(self, default: DefaultPriorityClass) -> None:
        self._default = default

    def __call__(self, attributes: Attributes) -> None:
        rt, pc = attributes.rt, attributes.obj
        if rt.is_custom or (rt.group, rt.kind) != ("scheduling.k8s.io", "PriorityClass"):
            return
        if pc.get("globalDefault") is not True:
            return
        default = self._default.get()
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
