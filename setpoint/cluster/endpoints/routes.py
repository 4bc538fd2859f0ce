"""The routes a resource's paths have: which HTTP methods they answer, as the apiserver's
installer (endpoints/installer.go) registers go-restful routes for the verbs a storage offers;
a method without a route is go-restful's 405."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from setpoint.cluster.apiextensions.customresources import terminating
from setpoint.cluster.endpoints.http import Response
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.endpoints.responses import text_response
from setpoint.cluster.registry.options import query_flag
from setpoint.cluster.registry.served import subresource_meta
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors

_SUBRESOURCE_VERBS = {"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create",
                      "DELETE": "delete"}
_WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def check_verb(rt: ResourceType, rp: ResourcePath, method: str,
            query: Any) -> None:
    """Verbs a resource does not offer are a 405, as discovery advertises. A subresource
    has a route for its verbs only: another method is go-restful's 405, which the
    apiserver's ServiceErrorHandler writes as NewGenericServerResponse's Status."""
    if rp.subresource:
        verb = _SUBRESOURCE_VERBS.get(method, "")
        if verb not in subresource_meta(rt, rp.subresource)[3]:
            if rt.is_custom:
                # serveStatus / serveScale answer other verbs NewMethodNotSupported
                raise errors.method_not_supported(rt.resource, verb, rt.group)
            raise errors.method_not_allowed()
        return
    if method == "GET":
        watch = rp.legacy_watch or (rp.name is None and query_flag(query, "watch"))
        verb = "watch" if watch else ("get" if rp.name is not None else "list")
    elif method == "DELETE":
        verb = "delete" if rp.name is not None else "deletecollection"
    else:
        verb = _WRITE_VERBS.get(method, "")
    if verb not in rt.verbs:
        raise errors.method_not_allowed()  # installer.go registers no route for it
    if verb == "create" and rt.is_custom and terminating(rt.crd):
        # customresource_handler.go serveResource: before the body is read
        raise errors.StatusError(
            405, "MethodNotAllowed",
            f"{verb} not allowed while custom resource definition is terminating",
            group=rt.group, kind=rt.resource)


def nameless(rt: ResourceType) -> errors.StatusError:
    """PUT or PATCH on a collection: a built-in collection's path has no such route (go-
    restful's 405); the CRD handler takes the verb and its namer finds no name
    (handlers/namer.go ``errEmptyName``)."""
    if rt.is_custom:
        return errors.bad_request("name must be provided")
    return errors.method_not_allowed()


def no_route(served: Iterable[ResourceType], group: str) -> Response:
    """A path under ``/apis/<group>`` that nothing serves.

    A group built into the server has a go-restful WebService at ``/apis/<group>``, whose
    router answers a miss with a NotFound Status (``details: {}``: apiserver's
    ``serviceErrorHandler``, k8s.io/apiserver/pkg/server/handler.go); a group only custom
    resources serve is left by the CRD handler to the delegate chain, whose end is Go's
    ``http.NotFound`` (k8s.io/apiserver/pkg/util/notfoundhandler).
    """
    if any(not rt.is_custom for rt in served if rt.group == group):
        raise errors.path_not_found()
    return text_response("404 page not found\n", 404)
