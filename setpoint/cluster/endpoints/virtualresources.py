"""The resources no object is stored for: the reviews (TokenReview, SubjectAccessReview and
its kin: created, answered, never kept), ComponentStatus (listed and read from the server's
own health) and Binding (a pod bound to its node). Their REST storages in the apiserver have
no etcd behind them (pkg/registry/authentication/tokenreview, authorization/*review,
core/componentstatus, core/pod/storage BindingREST)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from setpoint.cluster.authorization import reviews
from setpoint.cluster.endpoints.collections import requesting_user
from setpoint.cluster.endpoints.http import Request, Response
from setpoint.cluster.endpoints.negotiation import (
    LIST_ROUTE_MEDIA_TYPES,
    ROUTE_MEDIA_TYPES,
    negotiate,
    restful_accept,
)
from setpoint.cluster.endpoints.requestbody import decode_body
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.endpoints.responses import (
    json_response,
    render_deleted,
    render_object,
    with_table_options,
)
from setpoint.cluster.endpoints.typedbodies import decode_kind
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors

if TYPE_CHECKING:
    from setpoint.cluster.authentication.tokens import Identity
    from setpoint.cluster.authorization.rbac import Authorizer
    from setpoint.cluster.registry import Registry
    from setpoint.machinery.objects import Obj


class VirtualParts(Protocol):
    """What the stored-nothing resources act on: the pods' registry entry and their
    binding, RBAC for the access reviews, the token authenticator for a TokenReview."""

    @property
    def registry(self) -> Registry: ...

    @property
    def authorizer(self) -> Authorizer: ...

    @property
    def service_account_identity(self) -> Callable[[str], Identity | None]: ...

    @property
    def bind_pod(self) -> Callable[[ResourceType, str, str, Any], Obj]: ...


async def serve_virtual(parts: VirtualParts, token: bytes | None, request: Request,
                        rt: ResourceType, rp: ResourcePath) -> Response:
    restful_accept(request.method, request.headers, rt.is_custom, LIST_ROUTE_MEDIA_TYPES
                   if request.method == "GET" and rp.name is None else ROUTE_MEDIA_TYPES)
    # the reviews, Binding and ComponentStatus are built-in kinds: the legacy codecs answer
    # them in protobuf when asked
    media = negotiate(request.headers.get("accept"), protobuf=True)
    if request.method == "GET":
        if rt.kind != "ComponentStatus":
            raise errors.method_not_allowed()  # a review's paths have a POST route only
        listed = reviews.component_statuses()
        # componentstatus REST is a TableConvertor (printComponentStatus), and its answers
        # go through transformResponseObject as any resource's do
        media = with_table_options(media, request.query)
        if rp.name is None:
            return render_deleted(rt, listed, media, 200, [])
        for item in listed["items"]:
            if item["metadata"]["name"] == rp.name:
                return render_object(rt, {"kind": rt.kind, "apiVersion": "v1", **item}, media)
        raise errors.not_found(rt.resource, rp.name)
    sent = await decode_body(request, rt.api_version, rt.kind)
    body = decode_kind(sent.obj, rt.api_version, rt.kind, sent.literals)
    if rt.kind == "Binding":
        # a body that is no object (JSON null) is bind_pod's 400, as on pods/binding
        meta = body.get("metadata") if isinstance(body, dict) else None
        name = meta.get("name", "") if isinstance(meta, dict) else ""
        pods = parts.registry.require("", "v1", "pods")
        return json_response(parts.bind_pod(pods, rp.namespace or "", name, body), 201,
                             media)
    sent_token = token.decode() if token else None
    return json_response(reviews.create(
        parts.authorizer, parts.service_account_identity, rt, rp.namespace, body,
        sent_token, requesting_user(request)), 201, media)
