"""A named GET answered from an object's stored bytes, its decisions remembered per connection.

A GET of one object by name, with no query, is what controllers and clients send most. Every
decision the handler chain makes for it before the store's lookup reads the request's
headers, its connection and its path without the name, never the name:
authentication (kube-apiserver's union authenticator: the connection's client certificate,
fixed by its handshake, or the server's own token), the API Priority and Fairness match
(rule.go reads no name), the request deadline (no ``timeout`` parameter), routing (the
registry's type, go-restful's verb and Accept checks, a CRD's deprecation warning),
negotiation, the ``apiserver_request_total`` labels, and the answer's headers (content type,
the PF UIDs, ``Cache-Control``). Once a connection has had such a GET answered with an
object's stored bytes, those decisions are kept for it, by the headers as sent and the path
without its last segment, the name (requestinfo.go reads the segments before a GET's name
only), and the next GET of that shape does only what reads the name: RBAC's decision, for a
user outside ``system:masters`` (asked on every request, as kube-apiserver's RBAC
authorizer is), and the store's lookup.

What is remembered is forgotten when what it was decided from changes: the registry's
served types (a CRD written), the FlowSchemas and priority levels, a remote APIService for
the group and version. A user a service account's token names is not remembered (the token
may be revoked at any time), nor an impersonated one, nor the core ``namespaces`` resource
(authorized and classified as the namespace its name is). Anything else, an error or an
answer that is not the stored bytes, goes through the whole chain, which then decides it
as it always did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from setpoint.cluster.authorization.rbac import Attributes
from setpoint.cluster.endpoints.auditing import new_audit_id
from setpoint.cluster.endpoints.http import (
    CONNECTION_KEY,
    LONG_PATH_KEY,
    LONG_QUERY_KEY,
    WRITE_PIECE,
    Message,
    Request,
    Response,
)
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.endpoints.responses import stored_answer
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.aggregator import Aggregator
    from setpoint.cluster.authorization.rbac import Authorizer
    from setpoint.cluster.endpoints.metrics import APIServerMetrics
    from setpoint.cluster.endpoints.priorityandfairness import FlowClassifier
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST

_KEPT_PER_CONNECTION = 64  # shapes a connection keeps (a client reads a few types)
_MEMO_KEY = "setpoint.stored-gets"


class StoredGet(NamedTuple):
    """What the chain decided for a named GET of one shape, on one connection."""

    user: Obj
    authenticated: bool
    attributes: Attributes | None  # RBAC must still judge each name (not a master's GET)
    rt: ResourceType
    namespace: str | None
    headers: tuple[tuple[str, str], ...]  # the answer's, cache control included
    labels: tuple[str, ...]  # apiserver_request_total's
    generations: tuple[int, int]  # (registry, flow schemas) when decided
    audit_id: str  # the client's own Audit-ID header, as sent ("": none, a new one each)


def is_named_get(request: Request, rp: ResourcePath | None) -> bool:
    """Whether the request is a plain GET of one object: no query, no subresource, the
    name the path's last segment."""
    return rp is not None and rp.name is not None and request.method == "GET" \
        and not request.raw_query and not rp.subresource and not rp.legacy_watch \
        and not rp.extra and (rp.group != "" or rp.resource != "namespaces") \
        and request.path.rpartition("/")[2] == rp.name


class StoredGetParts(Protocol):
    """What a remembered GET asks: whether the served types or the remote APIServices
    changed, RBAC, and the stored bytes."""

    @property
    def registry(self) -> Registry: ...

    @property
    def aggregator(self) -> Aggregator: ...

    @property
    def authorizer(self) -> Authorizer: ...

    @property
    def rest(self) -> REST: ...


class StoredGets:
    """The named GETs each connection has had answered from the stored bytes."""

    def __init__(self, parts: StoredGetParts, flow_classifier: FlowClassifier,
                 metrics: APIServerMetrics) -> None:
        self._parts = parts
        self._flows = flow_classifier
        self._metrics = metrics

    def answer(self, request: Request) -> Response | None:
        """The answer to a GET with no query whose shape its connection has answered
        before, or None: the whole chain must serve it."""
        found = self.lookup(request.connection_memo, request.raw_headers, request.path)
        if found is None:
            return None
        route, served = found
        request.user = route.user
        request.authenticated = route.authenticated
        response = Response(stored_answer(served), serialized=True)
        response.headers = list(route.headers)
        self._metrics.count(route.labels)
        return response

    def lookup(self, memo: dict[Any, Any] | None, raw_headers: list[tuple[bytes, bytes]],
               path: str) -> tuple[StoredGet, bytes] | None:
        """The kept decisions and the object's stored bytes for a GET with no query of
        ``path`` with ``raw_headers`` (as sent) on the connection whose memo is ``memo``, or
        None: the whole chain must serve it. Counts nothing, so that a caller may still
        give the request to the chain."""
        routes: dict[tuple[object, ...], StoredGet] | None = \
            memo.get(_MEMO_KEY) if memo is not None else None
        if routes is None:
            return None
        shape, _, name = path.rpartition("/")
        key = (tuple(raw_headers), shape)
        route = routes.get(key)
        if route is None or not name:
            return None
        api, rt = self._parts, route.rt
        if route.generations != (api.registry.generation, self._flows.generation) \
                or (rt.group and api.aggregator.remote(rt.group, rt.version) is not None):
            del routes[key]
            return None
        try:
            if route.attributes is not None:
                api.authorizer.authorize(route.user, route.attributes._replace(name=name))
            served = api.rest.get_served_json(rt, route.namespace, name)
        except StatusError:
            return None  # (a 403 or a 404: the chain answers it, headers and all)
        if served is None:
            return None
        return route, served

    def answer_at_once(self, scope: Message) -> Response | None:
        """The whole answer, Audit-Id included, to a request still in the HTTP layer's
        hands (``atonce.AtOnce``) that is a remembered GET whose answer is written
        whole, or None (nothing counted) for the chain to serve it."""
        if scope["method"] != "GET" or scope["query_string"] or LONG_QUERY_KEY in scope \
                or LONG_PATH_KEY in scope:
            return None
        path: str = scope["path"]
        connection = scope.get(CONNECTION_KEY)
        if connection is None or "\ufffd" in path:
            return None  # (a name not UTF-8: Request keeps its bytes, the chain serves it)
        found = self.lookup(connection.memo, scope["headers"], path)
        if found is None:
            return None
        route, served = found
        if len(served) >= WRITE_PIECE:  # (gzipped, or written a piece at a time: the chain's)
            return None
        response = Response(stored_answer(served), serialized=True)
        response.headers = list(route.headers)
        response.audit_id = route.audit_id or new_audit_id()
        self._metrics.count(route.labels)
        return response

    def remember(self, request: Request, rp: ResourcePath, rt: ResourceType,
                 response: Response, labels: tuple[str, ...],
                 attributes: Attributes | None) -> None:
        """Keep what the chain decided for ``request``, a named GET (``is_named_get``) it
        answered with the object's stored bytes (``response``, final), for its
        connection's next ones; ``attributes`` what RBAC must judge for each, if anything."""
        memo = request.connection_memo
        if memo is None or not request.user_fixed or request.user is None:
            return
        routes: dict[tuple[object, ...], StoredGet] = memo.setdefault(_MEMO_KEY, {})
        if len(routes) >= _KEPT_PER_CONNECTION:
            routes.clear()
        key = (tuple(request.raw_headers), request.path.rpartition("/")[0])
        routes[key] = StoredGet(
            request.user, request.authenticated, attributes, rt, rp.namespace,
            tuple(response.headers), labels,
            (self._parts.registry.generation, self._flows.generation),
            request.headers.get("audit-id", ""))
