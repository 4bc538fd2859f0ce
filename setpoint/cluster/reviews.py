"""Resources that are answered, not stored: reviews, bindings, component statuses.

The embedded server authenticates one bearer token (the cluster administrator's) and
authorizes every authenticated request, so access reviews say so truthfully.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer

Obj = dict[str, Any]

ADMIN_USER = {"username": "setpoint-admin",
              "groups": ["system:masters", "system:authenticated"]}
ALLOWED_REASON = "the embedded cluster authorizes every authenticated request"

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


def create(api: APIServer, rt: ResourceType, ns: str | None, body: Any, token: str | None) -> Obj:
    """Answer a POST of a virtual kind (201 with the completed object)."""
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of a {rt.kind} must be a JSON object")
    kind = rt.kind
    out: Obj = {"kind": kind, "apiVersion": rt.api_version,
                "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None}}
    if "spec" in body:
        out["spec"] = body["spec"]
    if kind == "Binding":
        name = (body.get("metadata") or {}).get("name", "")
        pods = api.resource("", "v1", "pods")
        return api.bind_pod(pods, ns or "", name, body)
    if kind == "TokenReview":
        presented = (body.get("spec") or {}).get("token", "")
        sa = api.service_account_identity(presented) if presented.count(".") == 2 else None
        if token and presented == token:
            out["status"] = {"authenticated": True, "user": ADMIN_USER}
        elif sa is not None:
            out["status"] = {"authenticated": True, "user": {
                "username": sa.username, "uid": sa.uid, "groups": list(sa.groups)}}
        else:
            out["status"] = {"authenticated": False, "user": {},
                             "error": "invalid bearer token"}
    elif kind == "SelfSubjectReview":
        out["status"] = {"userInfo": ADMIN_USER}
    elif kind == "SelfSubjectRulesReview":
        out["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    elif kind.endswith("AccessReview"):
        out["status"] = {"allowed": True, "reason": ALLOWED_REASON}
    else:
        raise errors.method_not_supported(rt.resource, "create", rt.group)
    return out


def component_statuses() -> Obj:
    healthy = [{"type": "Healthy", "status": "True", "message": "ok"}]
    items = [{"metadata": {"name": n, "creationTimestamp": None}, "conditions": healthy}
             for n in ("controller-manager", "etcd-0", "scheduler")]
    return {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
