"""The HTTP front of the embedded API server: routing, limits, verbs.

Who sends a request is ``authentication.py``; the authorization and impersonation filters
``filters.py``; which methods a path answers ``routes.py``; the OpenAPI endpoints are
``openapi_handler.py``; the reads of a collection ``collections.py``; the resources nothing
is stored for ``virtualresources.py``; exec, attach and port-forward ``podstreams.py``;
reading and decoding the body ``requestbody.py``; the answers ``responses.py``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, TypeVar

from setpoint.cluster.apiextensions.customresources import serving_error
from setpoint.cluster.apiextensions.deprecation import deprecation_warnings
from setpoint.cluster.audit.context import (
    add_annotation,
    log_request_object,
    log_request_patch,
)
from setpoint.cluster.audit.metrics import AUDIT_METRICS
from setpoint.cluster.authentication.bearertoken import bearer_token
from setpoint.cluster.authorization import reviews
from setpoint.cluster.authorization.bootstrappolicy import MASTERS
from setpoint.cluster.authorization.rbac import Attributes
from setpoint.cluster.endpoints import contentencoding, podstreams, resourceproxy
from setpoint.cluster.endpoints.auditing import (
    Auditor,
    AuditStoreFailed,
    audit_id_of,
    decoded_patch,
    object_ref_of,
    store_failed_response,
)
from setpoint.cluster.endpoints.authentication import PUBLIC_PATHS, audited_user, authenticate
from setpoint.cluster.endpoints.collections import (
    CollectionReads,
    read_converted,
    requesting_user,
)
from setpoint.cluster.endpoints.contentencoding import GZIP_THRESHOLD_BYTES, serialized
from setpoint.cluster.endpoints.discovery_service import DiscoveryService
from setpoint.cluster.endpoints.filters import (
    DECISION_ANNOTATION,
    REASON_ANNOTATION,
    attributes_of,
    authorize,
    impersonate,
    impersonates,
    is_resource_path,
)
from setpoint.cluster.endpoints.healthz import ENDPOINTS, HealthChecks, health_checks
from setpoint.cluster.endpoints.http import Message, Request, Response
from setpoint.cluster.endpoints.metrics import (
    APIServerMetrics,
    request_labels,
    storage_object_counts,
)
from setpoint.cluster.endpoints.negotiation import (
    LIST_ROUTE_MEDIA_TYPES,
    ROUTE_MEDIA_TYPES,
    MediaType,
    negotiate,
    negotiate_error,
    offers_table,
    restful_accept,
    restful_consumes,
    restful_unsupported_content_type,
)
from setpoint.cluster.endpoints.nonresource import (
    cache_control,
    discovered,
    discovery_document,
    discovery_root,
    restful_get,
)
from setpoint.cluster.endpoints.openapi_handler import OpenAPIHandler
from setpoint.cluster.endpoints.openidmetadata import OpenIDMetadata
from setpoint.cluster.endpoints.podstreams import STREAMS
from setpoint.cluster.endpoints.prettyprint import pretty_printed, wants_pretty
from setpoint.cluster.endpoints.priorityandfairness import FlowClassifier
from setpoint.cluster.endpoints.requestbody import (
    decode_body,
    decode_object,
    delete_options,
    fresh_copy,
    read_body,
)
from setpoint.cluster.endpoints.requestdeadline import (
    answered_by,
    long_running,
    request_deadline,
)
from setpoint.cluster.endpoints.requestinfo import (
    ResourcePath,
    parse_resource_path,
    path_segments,
    resource_path_of,
)
from setpoint.cluster.endpoints.responses import (
    json_response,
    raw_json_response,
    render_deleted,
    render_object,
    render_write,
    status_response,
    stored_answer,
    text_response,
    with_table_options,
)
from setpoint.cluster.endpoints.routes import check_verb, nameless, no_route
from setpoint.cluster.endpoints.storedgets import StoredGets, is_named_get
from setpoint.cluster.endpoints.typedbodies import (
    decode_kind,
)
from setpoint.cluster.endpoints.virtualresources import serve_virtual
from setpoint.cluster.endpoints.warningheaders import warning_headers
from setpoint.cluster.registry.admissionpoints import (
    Steps,
    run_sync,
    subresource_create_steps,
)
from setpoint.cluster.registry.deletion import delete_warnings
from setpoint.cluster.registry.listing import (
    Filter,
    cache_wait_revision,
    parse_rv,
    too_large,
)
from setpoint.cluster.registry.options import (
    ListOptions,
    WriteOptions,
    query_flag,
    set_list_options_defaults,
    validate_list_options,
)
from setpoint.cluster.registry.patching import PATCH_TYPES, STRATEGIC_PATCH
from setpoint.cluster.registry.rest import delete_collection_page
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.endpoints.parts import FrontParts

log = logging.getLogger("setpoint.cluster")


# Subresources this server implements; the others (log, exec, proxy...) need a kubelet.
SERVED_SUBRESOURCES = {"status", "scale", "binding", "eviction", "finalize", "token", "log",
                       "exec", "attach", "portforward", "ephemeralcontainers", "approval",
                       "proxy", "resize"}
T = TypeVar("T")





# The built-in kinds a 1.32 apiserver serves that are deprecated, with installer.go's
# endpoint warning (endpoints/deprecation WarningMessage of k8s.io/api's prerelease
# lifecycle: core/v1 lifecycle.go, ComponentStatus deprecated in 1.19, no removal or
# replacement named).
_DEPRECATED_BUILTINS: dict[tuple[str, str, str], list[str]] = {
    ("", "v1", "ComponentStatus"): ["v1 ComponentStatus is deprecated in v1.19+"],
}

class Handler:
    """One handler for every path: the Kubernetes path grammar is not a route table."""

    def __init__(self, parts: FrontParts, token: str | None,
                 auditor: Auditor | None = None) -> None:
        self.parts = parts
        self.auditor = auditor  # None: auditing off (no --audit-policy-file or log path)
        self.token = token.encode() if token else None
        state = parts.state
        self.discovery = DiscoveryService(parts.registry, parts.aggregator,
                                          lambda: state.external_address)
        self.collections = CollectionReads(parts)
        self.openapi = OpenAPIHandler(parts.registry, parts.aggregator)
        self.metrics = APIServerMetrics(partial(storage_object_counts, parts.store),
                                        self.discovery.version,
                                        (*parts.metric_components, AUDIT_METRICS))
        self.flow_classifier = FlowClassifier(parts.store)
        self.stored_gets = StoredGets(parts, self.flow_classifier, self.metrics)

    @cached_property
    def openid(self) -> OpenIDMetadata:
        return OpenIDMetadata(self.parts.tokens, self.parts.state.external_address)

    @cached_property
    def health(self) -> HealthChecks:
        return HealthChecks(health_checks(self.parts.state))

    def answer_at_once(self, scope: Message) -> Response | None:
        """The answer to a request the HTTP layer may write without a task of its own
        (``atonce.AtOnce``): a GET its connection has had answered from the stored
        bytes before (storedgets.py), the same answer ``__call__`` gives it; None for
        anything else, and always while auditing is on."""
        if self.auditor is not None:
            return None
        return self.stored_gets.answer_at_once(scope)

    async def __call__(self, request: Request) -> Response:
        # the request deadline's filters are outside authentication (requestdeadline.py),
        # the Audit-Id outside everything (auditing.py); a remembered GET (storedgets.py)
        # only while auditing is off: an audited one goes through the audit filter
        audit_id = request.audit_id = audit_id_of(request)
        if request.method == "GET" and not request.raw_query and self.auditor is None:
            remembered = self.stored_gets.answer(request)
            if remembered is not None:
                if len(remembered.body) > GZIP_THRESHOLD_BYTES:
                    remembered = await serialized(remembered, request)
                remembered.audit_id = audit_id
                return remembered
        segments = path_segments(request.path)
        rp = resource_path_of(segments)
        try:
            deadline = request_deadline(request, segments, rp)
        except StatusError as err:
            response = status_response(err)
        else:
            if deadline is None:
                response = await self._serve(request, segments, rp, audit_id)
            else:
                response = await answered_by(deadline,
                                             self._serve(request, segments, rp, audit_id))
        labels = request_labels(request, rp, response.status)
        self.metrics.count(labels)
        response = cache_control(response)
        pretty = wants_pretty(response, request)
        if request.served_stored is not None and response.status == 200 and not pretty \
                and is_named_get(request, rp) and self.auditor is None:
            assert rp is not None and request.user is not None
            self.stored_gets.remember(
                request, rp, request.served_stored, response, labels,
                None if MASTERS in request.user.get("groups", ())
                else attributes_of(request, rp))
        if pretty:  # (a remembered GET is never pretty: its answer is the stored bytes)
            response = await pretty_printed(response)
        if response.serialized:  # (after remember: its headers are the request's own)
            response = await serialized(response, request)
        response.audit_id = audit_id  # (after remember: the headers kept hold none)
        return response

    async def _serve(self, request: Request, segments: list[str],
                     rp: ResourcePath | None, audit_id: str) -> Response:
        attrs = attributes_of(request, rp) if rp is not None and is_resource_path(segments) \
            else Attributes(request.method.lower(), path=request.path)
        auditor = self.auditor
        try:
            authenticate(self.parts.service_account_identity, self.token, request)
        except StatusError as err:
            if auditor is not None:
                await auditor.failed_authentication(request, audit_id, attrs,
                                              object_ref_of(attrs, rp.version if rp else ""),
                                              err.code)
            # the token authenticator's warning (an extra space) reaches the 401 too: the
            # warning recorder wraps authentication (server/config.go)
            warning = bearer_token(request.headers.get("authorization", "")).warning
            return status_response(err, warnings=[warning] if warning else None,
                                   media=negotiate_error(request.headers.get("accept")))
        try:
            begun = None if auditor is None else await auditor.begin(
                request, audit_id, attrs, object_ref_of(attrs, rp.version if rp else ""),
                audited_user(self.token, request), long_running(request, segments, rp))
        except AuditStoreFailed:
            return store_failed_response(request)
        matched: list[tuple[str, str]] = []
        try:
            if self.token is not None and request.path not in PUBLIC_PATHS \
                    and impersonates(request):
                request.user_fixed = False
                request.user = impersonate(self.parts.authorizer, request.user or {}, request)
                if begun is not None:
                    auditor.impersonated(begun[0], request.user)  # type: ignore[union-attr]
            # classified after authentication and impersonation, before authorization
            matched = self.flow_classifier.headers(request.user or {}, attrs)
            response = await self._dispatch(request, segments, rp)
        except StatusError as err:
            # every error past the deadline filter is ErrorNegotiated: YAML when asked for
            response = status_response(err, media=negotiate_error(request.headers.get("accept")))
        except Exception as exc:  # a bug of ours: answer as the apiserver would, keep serving
            log.exception("internal error serving %s %s", request.method, request.path)
            if begun is not None:
                await auditor.panicked(begun, exc)  # type: ignore[union-attr]
                begun = None
            response = status_response(
                errors.internal("an unexpected error occurred; see the server log"),
                media=negotiate_error(request.headers.get("accept")))
        except BaseException:  # cancelled: the request deadline passed, or the server stops
            if begun is not None:
                auditor.abandoned(begun, request)  # type: ignore[union-attr]
            raise
        response.headers.extend(matched)
        if begun is not None:
            response = await auditor.end(begun, response)  # type: ignore[union-attr]
        return response

    async def _dispatch(self, request: Request, segments: list[str],
                        rp: ResourcePath | None) -> Response:
        """``segments`` of the path and the resource they name (``resource_path_of``)."""
        path = request.path
        if path in ("/healthz", "/livez", "/readyz"):
            return self.health.root(path[1:], request)
        if not is_resource_path(segments):
            self._authorize(request, Attributes(request.method.lower(), path=path))
        if segments and segments[0] in ENDPOINTS and len(segments) > 1:
            answer = self.health.single(segments[0], path.split("/", 2)[2])
            return answer if answer is not None else text_response("404 page not found\n",
                                                                   404)
        if not segments:
            return raw_json_response(self.discovery.root_paths())
        head = segments[0]
        if head in (".well-known", "openid"):
            answer = self.openid.answer(path)
            if answer is not None:
                restful_get(request)
                return answer
        if path == "/metrics":
            return contentencoding.promhttp(self.metrics.answer(), request)
        if head == "version" and len(segments) == 1:
            restful_get(request)
            return raw_json_response(self.discovery.version())
        if head == "openapi":
            remote = self.openapi.remote_v3(segments)
            if remote is not None:
                from setpoint.cluster.endpoints import aggregated

                return await aggregated.proxy(request, self.parts.aggregator, remote)
            return self.openapi.serve(request, segments)
        if head == "api":
            if len(segments) == 1:
                restful_get(request)
                return discovery_root(self.discovery, request, legacy=True)
            if segments[1] != "v1":
                raise errors.path_not_found()
            if len(segments) == 2:
                restful_get(request)
                return discovery_document(request, self.discovery.core_resources())
            return await self._resource(request, rp, "")
        if head == "apis":
            if len(segments) == 1:
                return discovery_root(self.discovery, request, legacy=False)
            group = segments[1]
            if len(segments) > 2:
                remote = self.parts.aggregator.remote(group, segments[2])
                if remote is not None:
                    return await self._proxied(request, segments, remote)
            versions = self.parts.registry.groups().get(group)
            if not versions:
                if len(segments) == 2 and self.parts.aggregator.serves_group(group):
                    return discovery_document(request, self.discovery.group(group))
                return text_response("404 page not found\n", 404)
            if len(segments) == 2:
                return discovered(request, self.discovery.group(group))
            if segments[2] not in versions:
                return no_route(self.parts.registry.all(), group)
            if len(segments) == 3:
                restful_get(request)
                return discovered(request, self.discovery.resources(group, segments[2]))
            return await self._resource(request, rp, group)
        return text_response("404 page not found\n", 404)

    async def _proxied(self, request: Request, segments: list[str], apiservice: Obj,
                       ) -> Response:
        """A request for a remote APIService: authorized here, then proxied (the
        aggregator's handler sits behind the apiserver's authentication and authorization
        filters)."""
        from setpoint.cluster.endpoints import aggregated

        rp = parse_resource_path(segments[1:]) if is_resource_path(segments) else None
        if rp is not None:
            self._authorize(request, attributes_of(request, rp))
        return await aggregated.proxy(request, self.parts.aggregator, apiservice)

    # -- discovery -----------------------------------------------------------------------
    # -- resources -----------------------------------------------------------------------
    async def _resource(self, request: Request, rp: ResourcePath | None,
                        group: str) -> Response:
        if rp is None:
            return no_route(self.parts.registry.all(), group)
        if MASTERS in (request.user or reviews.ADMIN_USER).get("groups", ()):
            # (the privileged group: nothing to ask, and no attributes to build)
            if self.auditor is not None:
                add_annotation(DECISION_ANNOTATION, "allow")
                add_annotation(REASON_ANNOTATION, "")
        else:
            self._authorize(request, attributes_of(request, rp))
        rt = self.parts.registry.get(rp.group, rp.version, rp.resource)
        if rt is None:
            return no_route(self.parts.registry.all(), rp.group)
        if rp.extra and not rt.is_custom and rp.subresource != "proxy":
            raise errors.path_not_found()  # (authorized first: the filters precede the routes)
        if rt.is_custom and rp.namespace is None and rt.namespaced and (
                request.method != "GET" or (rp.name is not None and not rp.legacy_watch)):
            # customresource_handler.go: a namespaced resource outside a namespace serves
            # only list and watch; anything else goes to the delegate (a plain 404)
            return text_response("404 page not found\n", 404)
        if rp.namespace is not None and not rt.namespaced:
            if rt.is_custom:
                return text_response("404 page not found\n", 404)
            raise errors.path_not_found()
        if rp.namespace is None and rt.namespaced and rp.name is not None:
            # the installer routes a namespaced kind outside a namespace for lists only
            raise errors.path_not_found()
        if rt.is_custom and (failure := serving_error(rt.crd)) is not None:
            raise failure
        deprecation = deprecation_warnings(rt.crd, rt.version) if rt.is_custom else \
            _DEPRECATED_BUILTINS.get((rt.group, rt.version, rt.kind), [])
        if not deprecation:
            return await self._resource_verb(request, rt, rp)
        # the CRD handler records these before serving the verb, as the installer's
        # AddWarningsHandler does for a deprecated built-in kind: every answer carries them
        try:
            resp = await self._resource_verb(request, rt, rp)
        except StatusError as err:
            resp = status_response(err, media=negotiate_error(request.headers.get("accept")))
        resp.headers[:0] = [("warning", h) for h in warning_headers(deprecation)]
        return resp

    async def _resource_verb(self, request: Request, rt: ResourceType,
                             rp: ResourcePath) -> Response:
        if rp.subresource and (rp.subresource not in rt.subresources
                               or rp.subresource not in SERVED_SUBRESOURCES):
            if rt.is_custom and rp.name is not None:
                # customresource_handler.go: a subresource the version does not declare is
                # NotFound for the resource and the object's name
                raise errors.not_found(rt.resource, rp.name, rt.group)
            raise errors.path_not_found()
        method = request.method
        if rp.subresource in STREAMS and rt.kind == "Pod" and not rt.group and rp.name:
            return await podstreams.serve_connect(self.parts.webhooks, self.parts.store,
                                                  self.parts.registry, request, rt, rp)
        if rp.subresource == "proxy" and not rt.group and rp.name:
            return await resourceproxy.connect(self.parts.store, self.parts.registry, rt,
                                               rp.namespace or "", rp.name, request)
        check_verb(rt, rp, method, request.query)
        if reviews.is_virtual(rt):
            return await serve_virtual(self.parts, self.token, request, rt, rp)
        query = request.query
        if method == "GET":
            restful_accept(request.method, request.headers, rt.is_custom, LIST_ROUTE_MEDIA_TYPES
                           if rp.name is None or rp.legacy_watch else ROUTE_MEDIA_TYPES)
            # only a collection's GET reads ListOptions: a named GET is GetResource, whatever
            # its query says (requestinfo.go; installer.go routes no watch on an item but
            # the deprecated /watch/ prefix)
            watch = rp.legacy_watch or (rp.name is None and query_flag(query, "watch"))
            # a built-in kind's object, list or write is answered in protobuf when asked
            # (the legacy codecs); a custom resource's handler serves JSON and YAML
            protobuf = not rt.is_custom
            if rp.name is None or (watch and not rp.subresource):
                return await self.collections.get(
                    request, rt, rp, watch,
                    negotiate(request.headers.get("accept"), protobuf=protobuf))
            media = negotiate(request.headers.get("accept"),
                              allow_table=offers_table(rp.subresource), protobuf=protobuf)
            name = rp.name
            if query.get("resourceVersion"):  # served by the watch cache: at least this fresh
                await self._wait_fresh(parse_rv(query["resourceVersion"]))
            if not rp.subresource and not media.as_kind and media.type == "application/json":
                served = self.parts.rest.get_served_json(rt, rp.namespace, name)
                if served is not None:
                    request.served_stored = rt
                    return Response(stored_answer(served), 200, media.type, serialized=True,
                                    pretty=media.pretty)
            obj = await self._read(request, rt, rp)
            return render_object(rt, obj, with_table_options(media, query),
                                 subresource=rp.subresource or "")
        # (the writes in a method of their own: the closures they hand on make every call of
        # this one, every GET's too, set up their variables' cells)
        return await self._write(request, rt, rp)

    async def _read(self, request: Request, rt: ResourceType, rp: ResourcePath) -> Obj:
        """The object a GET names, presented (and converted, if it must be)."""
        assert rp.name is not None
        name = rp.name
        rest = self.parts.rest
        return await read_converted(self.parts.admission_webhooks, request, rt,
                                    lambda: rest.get_steps(rt, rp.namespace, name, rp.subresource))

    async def _write(self, request: Request, rt: ResourceType, rp: ResourcePath) -> Response:
        method, query = request.method, request.query
        if rp.legacy_watch:
            raise errors.method_not_allowed()  # /watch/ paths have GET routes only
        if rt.namespaced and rp.namespace is None and method in ("POST", "DELETE") \
                and rp.name is None:
            raise errors.method_not_allowed()
        ua = request.headers.get("user-agent", "")
        rest = self.parts.rest
        if method == "POST":
            restful_accept(request.method, request.headers, rt.is_custom, ROUTE_MEDIA_TYPES)
            media = negotiate(request.headers.get("accept"), protobuf=not rt.is_custom)
            if rp.name is not None and (rp.subresource or not rt.is_custom):
                return await self._create_subresource(request, rt, rp, media)
            # the CRD handler's create takes the object's name, whatever the URL names
            opts = WriteOptions.parse(query, "CreateOptions", ua, user=request.user)
            body = await decode_object(request, rt, opts)
            if self.auditor is not None:
                log_request_object(body.obj)
            result, warnings = await self._admitted(request, rt, lambda sent: rest.create_steps(
                rt, rp.namespace, sent, opts), body)
            result.warnings.extend(warnings)
            return render_write(rt, result, with_table_options(media, query))
        if method == "PUT":
            if rp.name is None:
                raise nameless(rt)
            restful_accept(request.method, request.headers, rt.is_custom, ROUTE_MEDIA_TYPES)
            media = negotiate(request.headers.get("accept"),
                              allow_table=offers_table(rp.subresource),
                              protobuf=not rt.is_custom)
            opts = WriteOptions.parse(query, "UpdateOptions", ua, user=request.user)
            body = await decode_object(request, rt, opts)
            if self.auditor is not None:
                log_request_object(body.obj)
            name = rp.name
            result, warnings = await self._admitted(request, rt, lambda sent: rest.update_steps(
                rt, rp.namespace, name, sent, opts, rp.subresource), body)
            result.warnings.extend(warnings)
            return render_write(rt, result, with_table_options(media, query))
        if method == "PATCH":
            if rp.name is None and not rt.is_custom:
                raise nameless(rt)  # go-restful: the method before the content type
            sent_type = request.headers.get("content-type", "")
            if not rt.is_custom and not restful_consumes(sent_type, PATCH_TYPES):
                # a built-in's PATCH route consumes its patch types only: go-restful refuses
                # any other (jsr311.go detectRoute), through the apiserver's serviceErrorHandler
                raise restful_unsupported_content_type(
                    request.headers.get("content-length"),
                    "chunked" in request.headers.get("transfer-encoding", "").lower())
            restful_accept(request.method, request.headers, rt.is_custom, ROUTE_MEDIA_TYPES)
            # PatchResource: the Content-Type up to its first ";", as sent, is the patch type;
            # then the name, then the Accept
            ctype = sent_type.split(";", 1)[0]
            if ctype not in PATCH_TYPES or (rt.is_custom and ctype == STRATEGIC_PATCH):
                raise errors.unsupported_media_type(", ".join(
                    t for t in PATCH_TYPES if not rt.is_custom or t != STRATEGIC_PATCH))
            if rp.name is None:
                raise nameless(rt)
            media = negotiate(request.headers.get("accept"),
                              allow_table=offers_table(rp.subresource),
                              protobuf=not rt.is_custom)
            opts = WriteOptions.parse(query, "PatchOptions", ua, user=request.user,
                                      apply=ctype == "application/apply-patch+yaml")
            raw = await read_body(request)
            if self.auditor is not None:
                log_request_patch(decoded_patch(raw, ctype))
            name = rp.name
            result, warnings = await self._admitted(request, rt, lambda _: rest.patch_steps(
                rt, rp.namespace, name, raw, ctype, opts, rp.subresource))
            result.warnings.extend(warnings)
            return render_write(rt, result, with_table_options(media, query))
        if method == "DELETE":
            restful_accept(request.method, request.headers, rt.is_custom, ROUTE_MEDIA_TYPES)
            media = negotiate(request.headers.get("accept"), protobuf=not rt.is_custom)
            if rp.name is None:
                # handlers/delete.go DeleteCollection: the list options are decoded,
                # defaulted, validated and their field labels converted before the body is
                # read; the store then lists with them (a watch's defaults change nothing
                # of what it lists)
                lopts = ListOptions.parse(query)
                set_list_options_defaults(lopts)
                validate_list_options(lopts)
                lopts.watch = False
                Filter(rest.codec, rt, lopts)
                dopts = await delete_options(request, rt, query)
                # then store.go DeleteCollection lists, in pages (the watch cache or etcd)
                await self.parts.freshness.wait_until_fresh(
                    cache_wait_revision(delete_collection_page(lopts)))
                # the Job registry's warning is recorded before the store's DeleteCollection
                # runs (pkg/registry/batch/job/storage/storage.go): its failures carry it too
                warned = delete_warnings(rt, dopts)
                try:
                    out, warnings = await self._admitted(request, rt, lambda _: (
                        rest.delete_collection_steps(rt, rp.namespace, lopts, dopts)))
                except StatusError as err:
                    return status_response(err, warned, negotiate_error(
                        request.headers.get("accept")))
                return render_deleted(rt, out, with_table_options(media, query), 200,
                                      warned + warnings)
            dopts = await delete_options(request, rt, query)
            if rp.subresource:
                raise errors.method_not_supported(f"{rt.resource}/{rp.subresource}", "delete",
                                                  rt.group)
            name = rp.name
            warned = delete_warnings(rt, dopts)  # (as above, before the store's Delete)
            try:
                (code, out), warnings = await self._admitted(
                    request, rt, lambda _: rest.delete_steps(rt, rp.namespace, name, dopts))
            except StatusError as err:
                return status_response(err, warned,
                                       negotiate_error(request.headers.get("accept")))
            return render_deleted(rt, out, with_table_options(media, query), code,
                                  warned + warnings)
        raise errors.method_not_allowed()

    async def _admitted(self, request: Request, rt: ResourceType,
                        steps: Callable[[Decoded], Steps[T]],
                        body: Decoded | None = None) -> tuple[T, list[str]]:
        """Run a request (with ``body``, if it has one), calling webhooks where it needs
        them: the admission webhooks when any are configured, the conversion webhook of a
        custom resource whose CRD has one; (its result, the webhooks' warnings)."""
        sent = body if body is not None else Decoded(None)
        webhooks = self.parts.webhooks
        if rt.conversion_webhook is None and not webhooks.configured():
            return run_sync(steps(sent)), []
        return await webhooks.run(lambda: steps(fresh_copy(sent)), requesting_user(request))

    def _authorize(self, request: Request, attrs: Attributes) -> None:
        authorize(self.parts.authorizer, self.auditor is not None, request, attrs)

    async def _create_subresource(self, request: Request, rt: ResourceType,
                                  rp: ResourcePath, media: MediaType) -> Response:
        assert rp.name is not None
        kinds = {"binding": ("v1", "Binding"), "eviction": ("policy/v1", "Eviction"),
                 "token": ("authentication.k8s.io/v1", "TokenRequest")}
        api_version, kind = kinds.get(rp.subresource, (rt.api_version, rt.kind))
        decoded = await decode_body(request, api_version, kind)
        decoded.obj = decode_kind(decoded.obj, api_version, kind, decoded.literals)
        if self.auditor is not None:
            log_request_object(decoded.obj)
        ns, name, subresource = rp.namespace or "", rp.name, rp.subresource
        act: Callable[[Any], Obj]
        if subresource == "token" and rt.kind == "ServiceAccount" and not rt.group:
            act = partial(self.parts.request_token, ns, name)
        elif subresource == "binding":
            act = partial(self.parts.bind_pod, rt, ns, name)
        elif subresource == "eviction":
            # the request's dryRun goes into the eviction's DeleteOptions
            act = partial(self.parts.evict_pod, rt, ns, name, request.query)
        else:
            raise errors.method_not_allowed()  # an object's path has no POST route
        opts = WriteOptions.parse(request.query, "CreateOptions",
                                  request.headers.get("user-agent", ""), user=request.user)
        group, _, version = api_version.rpartition("/")
        out, warnings = await self._admitted(request, rt, lambda sent: subresource_create_steps(
            rt, ns, name, subresource, (group, version, kind), sent.obj, opts, act), decoded)
        return json_response(out, 201, media, warnings)

    async def _wait_fresh(self, revision: int) -> None:
        """A read the watch cache serves must see at least the revision it asks for: it
        waits up to 3 s for a write to reach it (watch_cache.go waitUntilFreshAndBlock),
        then answers the Timeout."""
        if not await self.parts.freshness.wait_until_fresh(revision):
            raise too_large(revision, self.parts.store.revision)

