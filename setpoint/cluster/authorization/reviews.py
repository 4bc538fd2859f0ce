"""Resources that are answered, not stored: reviews, bindings, component statuses.

Access reviews ask the server's RBAC authorizer
(:mod:`setpoint.cluster.authorization.rbac`) about the
requester (self reviews) or about the user the review names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from setpoint.cluster.authentication.tokens import DEFAULT_AUDIENCES, audience_error
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.authentication.tokens import Identity
    from setpoint.cluster.authorization.rbac import Authorizer

ADMIN_USER = {"username": "setpoint-admin",
              "groups": ["system:masters", "system:authenticated"]}

# kind -> whether it is answered without storage
VIRTUAL_KINDS = {
    ("", "Binding"), ("", "ComponentStatus"),
    ("authentication.k8s.io", "TokenReview"), ("authentication.k8s.io", "SelfSubjectReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("authorization.k8s.io", "LocalSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
}


def is_virtual(rt: ResourceType) -> bool:
    return (rt.group, rt.kind) in VIRTUAL_KINDS


def create(authorizer: Authorizer, authenticate: Callable[[str], Identity | None],
           rt: ResourceType, ns: str | None, body: Any, token: str | None,
           user: Obj | None = None) -> Obj:
    """Answer a POST of a review (201 with the completed object): the RBAC ``authorizer``
    answers access and rules reviews, ``authenticate`` a token review of a service account
    token; ``user`` is who sends it (default: the administrator). A Binding is the pod
    storage's (:func:`setpoint.cluster.registry.podsubresources.bind`)."""
    user = user or ADMIN_USER
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of a {rt.kind} must be a JSON object")
    kind = rt.kind
    out: Obj = {"kind": kind, "apiVersion": rt.api_version,
                "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None}}
    if "spec" in body:
        out["spec"] = body["spec"]
    if kind == "TokenReview":
        spec = body.get("spec") or {}
        presented = str(spec.get("token") or "")
        if not presented:  # tokenreview/storage.go Create, before any authenticator runs
            raise errors.bad_request("token is required for TokenReview in authentication")
        sa = authenticate(presented) if presented.count(".") == 2 else None
        # the audiences asked about, else the API's own (tokenreview/storage.go)
        wanted = [a for a in spec.get("audiences") or [] if isinstance(a, str)] or list(
            DEFAULT_AUDIENCES)
        refused = audience_error(sa, wanted) if sa is not None else None
        if token and presented == token:
            out["status"] = {"authenticated": True, "user": ADMIN_USER}
        elif sa is not None and refused is not None:
            out["status"] = {"authenticated": False, "user": {}, "error": refused}
        elif sa is not None:
            out["status"] = {"authenticated": True, "user": sa.user_info(),
                             "audiences": [a for a in sa.audiences if a in wanted]}
        else:
            out["status"] = {"authenticated": False, "user": {},
                             "error": "invalid bearer token"}
    elif kind == "SelfSubjectReview":
        out["status"] = {"userInfo": user}
    elif kind == "SelfSubjectRulesReview":
        namespace = str((body.get("spec") or {}).get("namespace") or "")
        resource_rules, non_resource_rules = authorizer.rules(user, namespace)
        out["status"] = {"resourceRules": resource_rules,
                         "nonResourceRules": non_resource_rules, "incomplete": False}
    elif kind.endswith("AccessReview"):
        out["status"] = _access_review(authorizer, kind, ns, body.get("spec") or {}, user)
    else:
        raise errors.method_not_supported(rt.resource, "create", rt.group)
    return out


def component_statuses() -> Obj:
    healthy = [{"type": "Healthy", "status": "True", "message": "ok"}]
    items = [{"metadata": {"name": n, "creationTimestamp": None}, "conditions": healthy}
             for n in ("controller-manager", "etcd-0", "scheduler")]
    return {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}


def _access_review(authorizer: Authorizer, kind: str, ns: str | None, spec: Obj, requester: Obj
                   ) -> Obj:
    """``status`` of a (Self/Local)SubjectAccessReview, from the RBAC authorizer."""
    from setpoint.cluster.authorization.rbac import Attributes

    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes = _review_causes(kind, ns, spec)
    if causes:
        # rest.go: NewInvalid(authorizationapi.Kind(review.Kind), "", errs) with the Kind of
        # the decoded internal object, which the conversion to the internal version left
        # empty: the message reads `.authorization.k8s.io "" is invalid`
        raise errors.invalid("", "", causes, "authorization.k8s.io")
    if kind == "SelfSubjectAccessReview":
        user = requester
    else:
        user = {"username": spec.get("user", ""), "groups": list(spec.get("groups") or [])}
    if resource is not None:
        namespace = str(resource.get("namespace") or "")
        attrs = Attributes(str(resource.get("verb") or ""),
                           resource=str(resource.get("resource") or ""),
                           subresource=str(resource.get("subresource") or ""),
                           group=str(resource.get("group") or ""),
                           version=str(resource.get("version") or ""), namespace=namespace,
                           name=str(resource.get("name") or ""))
    else:
        assert non_resource is not None  # exactly one of the two is set, checked above
        attrs = Attributes(str(non_resource.get("verb") or ""),
                           path=str(non_resource.get("path") or ""))
    allowed, reason = authorizer.decide(user, attrs)
    status: Obj = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def _go_non_resource(value: Any) -> fe.GoValue:
    """``%#v`` of the internal ``authorization.NonResourceAttributes``."""
    value = value if isinstance(value, dict) else {}
    path, verb = (fe.go_quote(str(value.get(k) or "")) for k in ("path", "verb"))
    return fe.GoValue(f"authorization.NonResourceAttributes{{Path:{path}, Verb:{verb}}}")


def _review_causes(kind: str, ns: str | None, spec: Obj) -> list[Cause]:
    """pkg/apis/authorization/validation/validation.go: ValidateSubjectAccessReviewSpec
    (and its Self variant, without the subject) and ValidateLocalSubjectAccessReview."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes: list[Cause] = []
    if resource is not None and non_resource is not None:
        causes.append(fe.invalid("spec.nonResourceAttributes", _go_non_resource(non_resource),
                                 "cannot be specified in combination with resourceAttributes"))
    if resource is None and non_resource is None:
        # the value shown is the (nil) nonResourceAttributes, printed as the string "null"
        causes.append(fe.invalid(
            "spec.resourceAttributes", "null",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
    if kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        causes.append(fe.invalid("spec.user", str(spec.get("user") or ""),
                                 "at least one of user or group must be specified"))
    if kind == "LocalSubjectAccessReview":
        if isinstance(resource, dict) and str(resource.get("namespace") or "") != (ns or ""):
            causes.append(fe.invalid("spec.resourceAttributes.namespace",
                                     str(resource.get("namespace") or ""),
                                     "must match metadata.namespace"))
        if non_resource is not None:
            causes.append(fe.invalid("spec.nonResourceAttributes",
                                     _go_non_resource(non_resource),
                                     "disallowed on this kind of request"))
    return causes
