"""DefaultIngressClass: an Ingress created without a class gets the default IngressClass.

A port of plugin/pkg/admission/network/defaultingressclass (a mutating plugin, CREATE only,
not subresources): an Ingress with neither ``spec.ingressClassName`` nor the
``kubernetes.io/ingress.class`` annotation gets the IngressClass annotated
``ingressclass.kubernetes.io/is-default-class: "true"``. Unlike StorageClasses, more than one
default is an error: the create is refused (403, the internal error's text in the message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.admission.forbidden import new_forbidden
from setpoint.cluster.registry.admissionpoints import Attributes

if TYPE_CHECKING:
    from setpoint.cluster.storage import Store

INGRESS_CLASSES = "networking.k8s.io/ingressclasses"
IS_DEFAULT_INGRESS_CLASS = "ingressclass.kubernetes.io/is-default-class"
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


class DefaultIngressClass:
    """The admission step that names the default class in new classless Ingresses."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __repr__(self) -> str:
        return "DefaultIngressClass()"

    def __call__(self, attributes: Attributes) -> None:
        rt = attributes.rt
        if (attributes.operation != "CREATE" or attributes.subresource
                or rt.group != "networking.k8s.io" or rt.resource != "ingresses"):
            return
        ingress = attributes.obj
        spec = ingress.setdefault("spec", {})
        if (spec.get("ingressClassName") is not None
                or INGRESS_CLASS_ANNOTATION in (ingress["metadata"].get("annotations") or {})):
            return
        defaults = [c for c in self._store.list(INGRESS_CLASSES)
                    if (c["metadata"].get("annotations") or {}).get(IS_DEFAULT_INGRESS_CLASS)
                    == "true"]
        if len(defaults) > 1:
            # getDefaultClass's InternalError, wrapped by admission.NewForbidden
            raise new_forbidden(
                rt, ingress, f"Internal error occurred: {len(defaults)} default IngressClasses "
                "were found, only 1 allowed")
        if defaults:
            spec["ingressClassName"] = defaults[0]["metadata"]["name"]
