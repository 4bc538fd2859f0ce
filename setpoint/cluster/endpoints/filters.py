"""The authorization filter of the HTTP front: what a request asks, and whom it impersonates.

The RBAC decision itself is :mod:`setpoint.cluster.authorization.rbac`'s; this turns a
request into the
attributes it judges (the apiserver's RequestInfo: verb, group, resource, subresource,
namespace, name, or a non-resource path) and applies ``Impersonate-User`` and
``Impersonate-Group`` once the requester may impersonate them.
"""

from __future__ import annotations

from setpoint.cluster.authentication.tokens import service_account_groups
from setpoint.cluster.authorization.bootstrappolicy import AUTHENTICATED, UNAUTHENTICATED
from setpoint.cluster.authorization.rbac import Attributes, Authorizer
from setpoint.cluster.endpoints.http import Request
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.registry.options import query_flag
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

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


def impersonate(authorizer: Authorizer, requester: Obj, username: str, groups: list[str]) -> Obj:
    """The user a request impersonates (``Impersonate-User``/``-Group``), once the
    requester is allowed to impersonate each of them; as the apiserver's filter, a
    non-anonymous user also belongs to ``system:authenticated``, and a service account
    without groups given to its own."""
    if not username:
        raise errors.bad_request("requested impersonation of groups without a user: "
                                 "impersonating a user is required")
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
    if username != "system:anonymous" and not {AUTHENTICATED, UNAUTHENTICATED} & set(groups):
        groups = [*groups, AUTHENTICATED]
    return {"username": username, "groups": groups}
