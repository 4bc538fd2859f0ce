"""The admission.k8s.io/v1 AdmissionRequest of an admission point, as the webhooks are sent
it (k8s.io/apiserver v0.32.0 pkg/admission/plugin/webhook/request admissionreview.go
``CreateV1AdmissionReview``) and as a ValidatingAdmissionPolicy's CEL sees it as
``request`` (pkg/admission/plugin/cel condition.go ``CreateAdmissionRequest``, the same
fields less the objects)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.admission.webhook.matching import request_namespace
from setpoint.cluster.registry.admissionpoints import AdmissionPoint
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.types import ResourceType


def admission_request(point: AdmissionPoint, target: ResourceType, user: Obj, *,
                      uid: str = "",
                      objects: tuple[Obj | None, Obj | None] | None = None) -> Obj:
    """The request of ``point`` as the resource ``target`` matched (the request's own, or an
    equivalent one: ``kind`` and ``resource`` name it, ``requestKind`` and
    ``requestResource`` what was sent; a subresource's own kind, a Scale or an Eviction, is
    both kinds). ``objects``, when given, are the object and the old object, already as
    ``target``'s version."""
    rt = point.rt
    if point.kind is not None:  # a subresource's own kind, as it was sent
        kind = request_kind = dict(zip(("group", "version", "kind"), point.kind, strict=True))
    else:
        kind = {"group": target.group, "version": target.version, "kind": target.kind}
        request_kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    request: Obj = {
        "uid": uid,
        "kind": kind,
        "resource": {"group": target.group, "version": target.version,
                     "resource": target.resource},
        "requestKind": request_kind,
        "requestResource": {"group": rt.group, "version": rt.version,
                            "resource": rt.resource},
        "name": point.name,
        "operation": point.operation,
        "userInfo": user,
    }
    if objects is not None:
        request["object"], request["oldObject"] = objects
    request["dryRun"] = point.dry_run
    request["options"] = point.options
    if namespace := request_namespace(point):
        request["namespace"] = namespace
    if point.subresource:
        request["subResource"] = request["requestSubResource"] = point.subresource
    return request
