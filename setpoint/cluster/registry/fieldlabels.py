"""The fields each kind can be selected by (``fieldSelector``), as Kubernetes defines them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from setpoint.machinery import errors
from setpoint.machinery.fielderrors import go_quote
from setpoint.machinery.fields import Selector
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType


def _get(obj: Obj, *path: str) -> str:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _pod(obj: Obj) -> dict[str, str]:
    return {
        "spec.nodeName": _get(obj, "spec", "nodeName"),
        "spec.restartPolicy": _get(obj, "spec", "restartPolicy"),
        "spec.schedulerName": _get(obj, "spec", "schedulerName"),
        "spec.serviceAccountName": _get(obj, "spec", "serviceAccountName"),
        "spec.hostNetwork": _get(obj, "spec", "hostNetwork") or "false",
        "status.phase": _get(obj, "status", "phase"),
        "status.podIP": _get(obj, "status", "podIP"),
        "status.nominatedNodeName": _get(obj, "status", "nominatedNodeName"),
    }


def _count(obj: Obj, *path: str) -> str:
    # an int32 written with strconv.Itoa: an unset count is "0"
    return _get(obj, *path) or "0"


def _event(obj: Obj, ref: str = "involvedObject", source: tuple[str, ...] = ("source",),
           reporting: str = "reportingComponent") -> dict[str, str]:
    """pkg/registry/core/event/strategy.go ToSelectableFields, read from a core/v1 Event or,
    with its field names, an events.k8s.io/v1 one; the labels are always core's, which the
    events.k8s.io conversion renames its own to."""
    controller = _get(obj, reporting)
    labels = {f"involvedObject.{k}": _get(obj, ref, k) for k in _OBJECT_REFERENCE}
    return {**labels,
            "reason": _get(obj, "reason"),
            "reportingComponent": controller,
            "source": _get(obj, *source, "component") or controller,
            "type": _get(obj, "type")}


def _events_v1(obj: Obj) -> dict[str, str]:
    return _event(obj, "regarding", ("deprecatedSource",), "reportingController")


_OBJECT_REFERENCE = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                     "fieldPath")


FIELD_LABELS: dict[tuple[str, str], Callable[[Obj], dict[str, str]]] = {
    ("", "Pod"): _pod,
    ("", "Event"): _event,
    ("events.k8s.io", "Event"): _events_v1,
    ("", "Secret"): lambda o: {"type": _get(o, "type")},
    ("", "Namespace"): lambda o: {"status.phase": _get(o, "status", "phase")},
    ("", "Node"): lambda o: {"spec.unschedulable": _get(o, "spec", "unschedulable") or "false"},
    ("", "ReplicationController"): lambda o: {"status.replicas": _count(o, "status", "replicas")},
    ("batch", "Job"): lambda o: {"status.successful": _count(o, "status", "succeeded")},
    ("", "Service"): lambda o: {"spec.clusterIP": _get(o, "spec", "clusterIP"),
                                "spec.type": _get(o, "spec", "type")},
    ("certificates.k8s.io", "CertificateSigningRequest"): lambda o: {
        "spec.signerName": _get(o, "spec", "signerName")},
}


def field_labels(rt: ResourceType, obj: Obj) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    labels = {"metadata.name": meta.get("name", "")}
    if rt.namespaced:
        labels["metadata.namespace"] = meta.get("namespace", "")
    fn = FIELD_LABELS.get((rt.group, rt.kind))
    if fn is not None:
        labels.update(fn(obj))
    if rt.is_custom:
        for sf in ((rt.crd or {}).get("spec", {}).get("versions") or []):
            if sf.get("name") == rt.version:
                for sel in sf.get("selectableFields") or []:
                    # strategy.go prepareSelectableFields: one leading dot trimmed
                    path = sel["jsonPath"].removeprefix(".")
                    labels[path] = _get(obj, *path.split("."))
    return labels


def supported(rt: ResourceType) -> set[str]:
    """The field selector keys a resource accepts (others are a 400)."""
    return set(_conversion(rt)[0])


def _conversion(rt: ResourceType) -> tuple[frozenset[str], str]:
    """The labels ``rt``'s field label conversion accepts, and the wording of its refusal."""
    conversion = _CONVERSIONS.get((rt.group, rt.kind))
    if conversion is not None:
        return conversion
    if rt.is_custom:
        return frozenset(field_labels(rt, {"metadata": {}})), _NOT_SUPPORTED
    return _DEFAULT_CONVERSION


def convert_field_selector(rt: ResourceType, selector: Selector) -> Selector:
    """The selector as the apiserver's list and watch handlers transform it before anything
    is read (handlers/get.go ``opts.FieldSelector.Transform(scope.Convertor.
    ConvertFieldLabel)``, terms in their sorted order): each field through the kind's
    conversion, the first it refuses being a 400 BadRequest with the conversion's words. A
    built-in kind registers a conversion of its own (``scheme.AddFieldLabelConversionFunc``)
    or has ``runtime.DefaultMetaV1FieldSelectorConversion``, which takes metadata.name and
    metadata.namespace for any kind, cluster-scoped or not; a custom resource's is
    apiextensions' crConverter (metadata.namespace only when namespaced, then the version's
    selectableFields). A field accepted but not among the object's selectable fields
    reads as "" when matched (fields.Set)."""
    accepted, wording = _conversion(rt)
    renamed = _RENAMED.get((rt.group, rt.kind), {})
    requirements = []
    for r in selector.requirements:
        if r.field not in accepted:
            raise errors.bad_request(wording.format(label=r.field, quoted=go_quote(r.field)))
        requirements.append(replace(r, field=renamed.get(r.field, r.field)))
    return Selector(tuple(requirements))


_NOT_SUPPORTED = "field label not supported: {label}"
_META = ("metadata.name", "metadata.namespace")
# runtime.DefaultMetaV1FieldSelectorConversion (k8s.io/apimachinery pkg/runtime/conversion.go)
_DEFAULT_CONVERSION = (frozenset(_META), '{quoted} is not a known field selector: only '
                                         '"metadata.name", "metadata.namespace"')
# the registered conversions: pkg/apis/core/v1/conversion.go (addConversionFuncs,
# AddFieldLabelConversionsFor{Event,Namespace,Secret,Service}), pkg/apis/batch/v1/,
# events/v1/ and certificates/v1/conversion.go. apps/v1 registers none: ReplicaSet and
# StatefulSet have the default, whatever their strategies make selectable.
_CONVERSIONS: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    ("", "Pod"): (frozenset({
        *_META, "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
        "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
        "status.podIPs", "status.nominatedNodeName", "spec.host"}), _NOT_SUPPORTED),
    ("", "Node"): (frozenset({"metadata.name", "spec.unschedulable"}), _NOT_SUPPORTED),
    ("", "ReplicationController"): (frozenset({*_META, "status.replicas"}), _NOT_SUPPORTED),
    ("", "Event"): (frozenset({
        *_META, "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}),
        _NOT_SUPPORTED),
    ("", "Namespace"): (frozenset({"metadata.name", "status.phase"}), _NOT_SUPPORTED),
    ("", "Secret"): (frozenset({*_META, "type"}), _NOT_SUPPORTED),
    ("", "Service"): (frozenset({*_META, "spec.clusterIP", "spec.type"}), _NOT_SUPPORTED),
    ("batch", "Job"): (frozenset({*_META, "status.successful"}),
                       "field label {quoted} not supported for batchv1.Job"),
    ("events.k8s.io", "Event"): (frozenset({
        *_META, *(f"regarding.{k}" for k in _OBJECT_REFERENCE), "reason",
        "reportingController", "source", "type"}), _NOT_SUPPORTED),
    ("certificates.k8s.io", "CertificateSigningRequest"): (
        frozenset({"metadata.name", "spec.signerName"}), _NOT_SUPPORTED),
}
# "for backwards compatibility with old v1 clients which send spec.host"
_RENAMED = {
    ("", "Pod"): {"spec.host": "spec.nodeName"},
    # pkg/apis/events/v1/conversion.go: "map events.k8s.io field to fieldset returned by
    # ToSelectableFields"
    ("events.k8s.io", "Event"): {
        "reportingController": "reportingComponent",
        **{f"regarding.{k}": f"involvedObject.{k}" for k in _OBJECT_REFERENCE}},
}
