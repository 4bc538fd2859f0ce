"""The authorization filter of the HTTP front: what a request asks, and whom it impersonates.

The RBAC decision itself is :mod:`setpoint.cluster.authorization.rbac`'s; this turns a
request into the
attributes it judges (the apiserver's RequestInfo: verb, group, resource, subresource,
namespace, name, or a non-resource path) and applies ``Impersonate-User`` and
``Impersonate-Group`` once the requester may impersonate them.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from setpoint.cluster.audit.context import add_annotation
from setpoint.cluster.authentication.tokens import service_account_groups
from setpoint.cluster.authorization import reviews
from setpoint.cluster.authorization.bootstrappolicy import AUTHENTICATED, MASTERS, UNAUTHENTICATED
from setpoint.cluster.authorization.rbac import Attributes, Authorizer, forbidden
from setpoint.cluster.endpoints.http import Request
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.registry.options import query_flag
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def is_resource_path(segments: list[str]) -> bool:
    """Whether the path names resources (``/api/v1/<...>``, ``/apis/<g>/<v>/<...>``)."""
    return (len(segments) > 2 and segments[0] == "api") or \
        (len(segments) > 3 and segments[0] == "apis")


def attributes_of(request: Request, rp: ResourcePath) -> Attributes:
    """The request as the authorizer sees it (the apiserver's RequestInfo)."""
    method = request.method
    if method == "GET":
        watch = rp.legacy_watch or (rp.name is None and query_flag(request.query, "watch"))
        verb = "watch" if watch else ("get" if rp.name is not None else "list")
    elif method == "DELETE":
        verb = "delete" if rp.name is not None else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    namespace = rp.namespace or ""
    if not rp.group and rp.resource == "namespaces" and rp.name:
        namespace = rp.name  # a namespace is authorized as the namespace it is
    return Attributes(verb, resource=rp.resource, subresource=rp.subresource, group=rp.group,
                      version=rp.version, namespace=namespace, name=rp.name or "")


IMPERSONATE_EXTRA = "impersonate-extra-"
_AUTHENTICATION_V1 = "authentication.k8s.io/v1"
_MALFORMED_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def impersonates(request: Request) -> bool:
    """Whether the request asks to act as someone else (any Impersonate-* header)."""
    return any(name.startswith("impersonate-") for name in request.headers)


def _extra_key(encoded: str) -> str:
    # impersonation.go unescapeExtraKey: url.PathUnescape, the key as sent when it fails
    return encoded if _MALFORMED_ESCAPE.search(encoded) else unquote(encoded)


def impersonate(authorizer: Authorizer, requester: Obj, request: Request) -> Obj:
    """The user a request impersonates, once the requester may impersonate each part of it,
    as k8s.io/apiserver pkg/endpoints/filters/impersonation.go does: ``Impersonate-User``
    (a service account or a user), each ``Impersonate-Group``, each value of each
    ``Impersonate-Extra-<key>`` (``userextras/<key>``) and ``Impersonate-Uid`` (``uids``),
    authorized in that order. Groups, extras or a uid without a user are its
    ``InternalError``. A non-anonymous user also belongs to ``system:authenticated``,
    the anonymous one to ``system:unauthenticated``, a service account without groups
    given to its own."""
    username = request.headers.get("impersonate-user", "")
    groups = request.header_values("impersonate-group")
    extras = [(_extra_key(name[len(IMPERSONATE_EXTRA):]), value)
              for name, value in request.raw_header_items()
              if name.lower().startswith(IMPERSONATE_EXTRA)]
    uid = request.headers.get("impersonate-uid", "")
    if not username:
        # Go's %v of the []ObjectReference built (Kind Namespace Name UID APIVersion
        # ResourceVersion FieldPath)
        refs = [f"{{Group  {g}    }}" for g in groups]
        refs += [f"{{UserExtra  {v}  {_AUTHENTICATION_V1}  {k}}}" for k, v in extras]
        refs += [f"{{UID  {uid}  {_AUTHENTICATION_V1}  }}"] if uid else []
        problem = f"requested [{' '.join(refs)}] without impersonating a user"
        raise errors.StatusError(500, "InternalError", f"Internal error occurred: {problem}",
                                 causes=[errors.Cause("", problem)])
    if username.startswith("system:serviceaccount:") and username.count(":") == 3:
        namespace, name = username.split(":")[2:]
        authorizer.authorize(requester, Attributes("impersonate", resource="serviceaccounts",
                                                   namespace=namespace, name=name))
        if not groups:
            groups = list(service_account_groups(namespace))
    else:
        authorizer.authorize(requester, Attributes("impersonate", resource="users",
                                                   name=username))
    for group in groups:
        authorizer.authorize(requester, Attributes("impersonate", resource="groups",
                                                   name=group))
    extra: dict[str, list[str]] = {}
    for key, value in extras:
        authorizer.authorize(requester, Attributes(
            "impersonate", resource="userextras", subresource=key,
            group="authentication.k8s.io", version="v1", name=value))
        extra.setdefault(key, []).append(value)
    if uid:
        authorizer.authorize(requester, Attributes(
            "impersonate", resource="uids", group="authentication.k8s.io", version="v1",
            name=uid))
    if username == "system:anonymous":
        if UNAUTHENTICATED not in groups:
            groups = [*groups, UNAUTHENTICATED]
    elif not {AUTHENTICATED, UNAUTHENTICATED} & set(groups):
        groups = [*groups, AUTHENTICATED]
    user: Obj = {"username": username, "groups": groups}
    if uid:
        user["uid"] = uid
    if extra:
        user["extra"] = extra
    return user


def authorize(authorizer: Authorizer, audited: bool, request: Request,
              attrs: Attributes) -> None:
    """``WithAuthorization``: 403 unless allowed; the decision and its reason annotate
    the audit event (filters/authorization.go)."""
    user = request.user or reviews.ADMIN_USER
    if MASTERS in user.get("groups", ()):  # (the privileged group: no lookup)
        allowed, reason = True, ""
    else:
        allowed, reason = authorizer.decide(user, attrs)
    if audited:
        add_annotation(DECISION_ANNOTATION, "allow" if allowed else "forbid")
        add_annotation(REASON_ANNOTATION, reason)
    if not allowed:
        raise forbidden(user, attrs)
