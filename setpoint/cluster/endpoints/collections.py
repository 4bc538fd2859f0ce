"""The reads of a collection: LIST (full objects, metadata only or a Table; JSON or YAML,
presented and encoded a chunk at a time) and WATCH (its events, converted by a CRD's webhook
when it has one), after the watch cache's freshness wait."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from functools import partial
from itertools import takewhile
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson

from setpoint.cluster.authorization import reviews
from setpoint.cluster.endpoints.http import Request, Response, StreamResponse
from setpoint.cluster.endpoints.listencoding import (
    LIST_CHUNK_ITEMS,
    encode_list,
    in_chunks,
    json_parts,
)
from setpoint.cluster.endpoints.negotiation import MediaType, negotiate
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.endpoints.responses import (
    encode,
    internal_type_name,
    json_response,
    partial_metadata,
    with_table_options,
)
from setpoint.cluster.endpoints.watch import BLUEPRINT_ANNOTATION, CHANGE, WatchStream
from setpoint.cluster.registry import fieldlabels
from setpoint.cluster.registry.admissionpoints import ConversionPoint, Steps, run_sync
from setpoint.cluster.registry.listing import (
    Filter,
    cache_wait_revision,
    list_item,
    list_items_json,
    page_converted,
    parse_rv,
    too_large,
)
from setpoint.cluster.registry.options import (
    ListOptions,
    set_list_options_defaults,
    validate_list_options,
)
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors, fields, gojson
from setpoint.machinery.errors import StatusError
from setpoint.machinery.gojson import go_text, html_escaped
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.admission.webhook.dispatcher import WebhookAdmission
    from setpoint.cluster.endpoints.parts import OpenStreams
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.storage import Store
    from setpoint.cluster.storage.freshness import Freshness
    from setpoint.cluster.webhook.client import WebhookClient

T = TypeVar("T")


# negotiation.MediaTypesForSerializer's streamMediaTypes: the serializers with a stream
# serializer (JSON and protobuf, not YAML), each with ";stream=watch"
WATCH_MEDIA_TYPES = ("application/json;stream=watch, "
                     "application/vnd.kubernetes.protobuf;stream=watch")


def _partial_bookmark(obj: Obj, version: str) -> Obj:
    """A bookmark of a PartialObjectMetadata watch; the initial-events-end one's list
    blueprint is an empty PartialObjectMetadataList (handlers/response.go
    watchListTransformer.transformInitialEventsListBlueprint), JSON-encoded with the
    encoder's newline, in standard base64."""
    out = partial_metadata(obj, version)
    annotations = out["metadata"].get("annotations")
    if annotations and BLUEPRINT_ANNOTATION in annotations:
        blueprint = orjson.dumps({"kind": "PartialObjectMetadataList",
                                  "apiVersion": f"meta.k8s.io/{version}",
                                  "metadata": {}, "items": None}) + b"\n"
        out["metadata"] = {**out["metadata"], "annotations": {
            **annotations, BLUEPRINT_ANNOTATION: base64.b64encode(blueprint).decode()}}
    return out


def _is_watch_list(opts: ListOptions) -> bool:
    """``isListWatchRequest`` (after the defaults: a watch from "" or "0" sends its initial
    events): a watch that sends its initial events and allows bookmarks.
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go."""
    return opts.watch and opts.allow_bookmarks and bool(opts.send_initial_events)


def _named_watch_selector(rt: ResourceType, name: str, given: str) -> str:
    """The field selector of a watch of one object (``/watch/.../NAME``): its name as a
    ``metadata.name`` selector. A selector given as well must pin that very name, or the
    request is a 400 (handlers/get.go ListResource: ``RequiresExactMatch("metadata.name")``
    on the selector as the kind's field label conversion left it, after that conversion's
    own 400)."""
    if given:
        selector = fieldlabels.convert_field_selector(rt, fields.parse(given))
        if not selector.empty:
            if selector.requires_exact_match("metadata.name") != name:
                raise errors.bad_request(
                    "fieldSelector metadata.name doesn't match requested name")
            return given
    return f"metadata.name={fields.escape_value(name)}"


class CollectionParts(Protocol):
    """What the reads of a collection are given: the store's revision, the REST storage,
    the watch cache's freshness, the open streams to close on stop, and the webhook
    dispatcher and client, made on first use."""

    @property
    def store(self) -> Store: ...

    @property
    def rest(self) -> REST: ...

    @property
    def freshness(self) -> Freshness: ...

    @property
    def streams(self) -> OpenStreams: ...

    def admission_webhooks(self) -> WebhookAdmission: ...

    def conversion_client(self) -> WebhookClient: ...


class CollectionReads:
    """LIST and WATCH of a resource type's objects, given the parts they read."""

    def __init__(self, parts: CollectionParts) -> None:
        self.parts = parts

    async def get(self, request: Request, rt: ResourceType, rp: ResourcePath, watch: bool,
                  media: MediaType) -> Response:
        """A GET of a collection (or of one object with ``watch``): its LIST or its WATCH."""
        opts = ListOptions.parse(request.query)
        opts.watch = watch
        set_list_options_defaults(opts)
        validate_list_options(opts)
        if media.as_kind == "Table" and _is_watch_list(opts):
            # a watch-list stream ends its initial events with a bookmark carrying an empty
            # list of the kind: no Table for it (handlers/get.go ListResource:
            # watchListEndpointRestrictions.AllowsMediaTypeTransform refuses "Table")
            media = negotiate(request.headers.get("accept"), allow_table=False,
                              protobuf=not rt.is_custom)
        if rp.name is not None:
            opts.field_selector = _named_watch_selector(rt, rp.name, opts.field_selector)
        ns = rp.namespace
        if watch:
            # the selectors are converted (400) and the watch cache parses the
            # resourceVersion (500) before the stream is set up (handlers/get.go
            # ListResource → cacher.go Watch)
            Filter(self.parts.rest.codec, rt, opts)
            parse_rv(opts.resource_version)
        wanted = cache_wait_revision(opts)
        # a LIST that waited in vain answers the Timeout itself (listing.list_stored)
        fresh = await self.parts.freshness.wait_until_fresh(wanted)
        if not watch:
            return await self._list(request, rt, ns, opts, media)
        # serveWatchHandler, once storage has answered (an error watcher too): the Table
        # options, then the stream serializer, which YAML has none of
        # (handlers/watch.go, negotiation.NegotiateOutputMediaTypeStream)
        media = with_table_options(media, request.query)
        if media.is_yaml:
            raise errors.not_acceptable(
                f"only the following media types are accepted: {WATCH_MEDIA_TYPES}")
        if not fresh:
            # cacher.go Watch: the wait's error comes as the stream's one ERROR event
            error = too_large(wanted, self.parts.store.revision).to_status()
            return _error_event(error, media)
        return await self._watch(request, rt, ns, opts, media)

    async def _list(self, request: Request, rt: ResourceType, ns: str | None,
                    opts: ListOptions, media: MediaType) -> Response:
        """A LIST in any representation (JSON or YAML; full objects, metadata only or a
        Table), its items presented and encoded a chunk at a time (``listencoding``)."""
        rest = self.parts.rest
        listed = rest.list_stored(rt, ns, opts)
        codec = rest.codec
        # the page is the stored JSON of its objects: each decoded as its chunk is presented

        def present(raw: Any) -> Obj:
            return codec.present(rt, orjson.loads(raw))

        chunk_json: Callable[[list[Any]], bytes] | None = None
        if rt.conversion_webhook is not None:
            # the page is converted in one review (webhook_converter.go converts a list's
            # items together); defaults and encoding then go a chunk at a time
            stored = [orjson.loads(raw) for raw in listed["items"]]
            converted = await read_converted(
                self.parts.admission_webhooks, request, rt,
                lambda: codec.present_all_steps(rt, stored, defaults=False))
            listed = page_converted(codec, rt, ns, opts, listed, converted)
            present = partial(codec.with_defaults, rt)
        elif codec.serves_stored(rt):
            chunk_json = partial(list_items_json, rt)  # spliced in as stored
        # transformResponseObject, once the read (its conversion too) is done: the Table
        # options, then the transformation (handlers/response.go)
        media = with_table_options(media, request.query)
        if media.as_kind == "PartialObjectMetadata":
            # asPartialObjectMetadata: a list is not one object
            raise errors.not_acceptable(
                "you requested PartialObjectMetadata, but the requested object is a list "
                f"({internal_type_name(rt, is_list=True)})")
        dumps = partial(encode, media=media, whole=False)  # (the parts of the answer)
        if media.as_kind == "Table":
            table = await self._table(rt, listed, media, present)
            body = await encode_list(table, _as_stored, dumps, yaml=media.is_yaml, key="rows")
        elif media.as_kind == "PartialObjectMetadataList" and media.is_protobuf:
            # (a client-go metadata informer's first choice) presented a chunk at a time,
            # then the list message encoded whole
            items = await in_chunks(listed["items"], lambda chunk: [
                partial_metadata(present(obj), media.version) for obj in chunk])
            return json_response({
                "kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{media.version}",
                "metadata": {k: v for k, v in listed["metadata"].items() if v != ""},
                "items": items}, 200, media)
        elif media.as_kind == "PartialObjectMetadataList":
            list_meta = {k: v for k, v in listed["metadata"].items() if v != ""}
            body = await encode_list({
                "kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{media.version}",
                "metadata": list_meta, "items": listed["items"],
            }, lambda obj: partial_metadata(present(obj), media.version), dumps, yaml=media.is_yaml)
        elif media.is_protobuf:
            # the list message holds its items whole: presented a chunk at a time, then
            # encoded (a kind's items, every one a message field of its list)
            items = await in_chunks(listed["items"], lambda chunk: [
                list_item(rt, present(obj)) for obj in chunk])
            return json_response({**listed, "items": items}, 200, media)
        elif chunk_json is not None and not media.is_yaml and len(
                listed["items"]) > LIST_CHUNK_ITEMS:
            # written a chunk at a time as the client reads it, never held whole: a LIST of
            # 100,000 would otherwise take a 50 MB body and as much in transport buffers,
            # which the allocator keeps once freed. Go's net/http chunks any answer of more
            # than 2 KiB written without a Content-Length (server.go bufferBeforeChunkingSize),
            # as kube-apiserver's list answers are (responsewriters/writers.go).
            # not long-running: dropped at the request timeout if its client stops reading
            return StreamResponse(json_parts(listed, _as_stored, dumps, chunk_json=chunk_json),
                                  _nothing, content_type=media.type, long_running=False,
                                  serialized=True, pretty=media.pretty)
        else:
            body = await encode_list(listed, lambda obj: list_item(rt, present(obj)), dumps,
                                     yaml=media.is_yaml,
                                     chunk_json=None if media.is_yaml else chunk_json)
        return Response(body, 200, media.type, serialized=True, pretty=media.pretty)

    async def _table(self, rt: ResourceType, listed: Obj, media: MediaType,
                     present: Callable[[Obj], Obj]) -> Obj:
        """A LIST as a Table (what ``kubectl get`` asks for), its rows made a chunk at a
        time."""
        from setpoint.cluster.endpoints.tables import row_order, to_table

        include_object = media.include_object or "Metadata"
        now = datetime.now(UTC)
        table = to_table(rt, [], list_meta=listed["metadata"], include_object=include_object,
                         now=now, table_version=media.version)

        items: list[Any] = listed["items"]
        order = row_order(rt)
        if order is not None:
            # the kind's list printer orders the rows itself (printFlowSchemaList): the page
            # is presented whole first
            items = sorted((present(obj) for obj in items), key=order)
            present = _as_stored

        def rows(chunk: list[Any]) -> list[Obj]:
            presented = [list_item(rt, present(obj)) for obj in chunk]
            return list(to_table(rt, presented, list_meta=None, include_object=include_object,
                                 now=now, table_version=media.version,
                                 no_headers=True)["rows"])

        table["rows"] = await in_chunks(items, rows)
        return table

    async def _watch(self, request: Request, rt: ResourceType, ns: str | None,
                     opts: ListOptions, media: MediaType) -> Response:
        rest = self.parts.rest
        convert = rt.conversion_webhook is not None
        # objects converted by webhook are converted a batch at a time, outside the stream
        present, present_bookmark = self._watch_presenters(
            rt, media, rest.present if not convert else rest.with_defaults)
        stream = WatchStream(rest, rt, ns, opts, present if not convert else _as_stored,
                             as_stored_json=not convert and not media.is_protobuf,
                             present_bookmark=present_bookmark)
        if stream.error is not None:
            return _error_event(stream.error, media)
        return StreamResponse(
            self._watch_events(stream, rt, present if convert else None, media.is_protobuf,
                               ends_at_first_object=media.as_kind == _METADATA_LIST),
            stream.close, content_type=_watch_content_type(media), ended=stream.wait_closed)

    async def _watch_events(self, stream: WatchStream, rt: ResourceType,
                            present: Callable[[Obj], Obj] | None,
                            protobuf: bool = False, *,
                            ends_at_first_object: bool = False) -> AsyncIterator[bytes]:
        self.parts.streams.track(stream)
        try:
            async for batch in stream:
                if present is not None:
                    batch = await self._converted(rt, batch, present, stream)
                    if not batch:
                        continue
                ending = False
                if ends_at_first_object:
                    errors_first = list(takewhile(lambda event: event[0] == "ERROR", batch))
                    ending = len(errors_first) < len(batch)
                    batch = errors_first
                if protobuf:
                    yield b"".join(_protobuf_frame(t, o) for t, o in batch)
                elif batch:
                    # one escaping pass over the batch: objects spliced in as stored are
                    # already escaped, and escaping twice changes nothing (gojson); only a
                    # custom resource holds floats (built-in kinds have none: API
                    # conventions)
                    written = go_text if rt.is_custom else html_escaped
                    yield written(b"".join(orjson.dumps({"type": t, "object": o}) + b"\n"
                                           for t, o in batch))
                if ending:
                    return
        finally:
            stream.close()
            self.parts.streams.untrack(stream)

    async def _converted(self, rt: ResourceType, batch: list[tuple[str, Obj]],
                         present: Callable[[Obj], Obj], stream: WatchStream
                         ) -> list[tuple[str, Obj]]:
        """A batch of watch events with their objects converted by the CRD's webhook (and a
        change's old object too when the field selector must see both converted: see
        ``WatchStream.resolve_converted``), in one review."""
        from setpoint.cluster.apiextensions import conversionwebhook

        objects: list[Obj] = []
        for t, o in batch:
            if t == CHANGE:
                objects += [o["object"]] + ([o["prev"]] if o["prev"] is not None else [])
            elif t not in ("BOOKMARK", "ERROR"):
                objects.append(o)
        try:
            converted = iter(await conversionwebhook.convert(
                self.parts.conversion_client(), ConversionPoint(rt, objects, rt.api_version)))
        except StatusError as err:
            return [("ERROR", err.to_status())]
        out: list[tuple[str, Obj]] = []
        for t, o in batch:
            if t == CHANGE:
                new = next(converted)
                old = next(converted) if o["prev"] is not None else None
                resolved = stream.resolve_converted(o, new, old)
                if resolved is not None:
                    out.append((resolved[0], present(resolved[1])))
            elif t in ("BOOKMARK", "ERROR"):
                out.append((t, o))
            else:
                out.append((t, present(next(converted))))
        return out

    def _watch_presenters(self, rt: ResourceType, media: MediaType,
                          present: Callable[[ResourceType, Obj], Obj]
                          ) -> tuple[Callable[[Obj], Obj], Callable[[Obj], Obj] | None]:
        """How an event's object is served, and how a bookmark's is. A bookmark in a Table
        or PartialObjectMetadata watch is transformed as any other event's object
        (handlers/response.go watchEncoder.Encode: it goes through the same embedded
        encoder's doTransformObject, so only the watch's first event, whichever, carries
        the Table's column definitions); a transformation that fails leaves it as it is
        (watchEmbeddedEncoder.doEncode: "result = obj"). A bookmark is not defaulted or
        converted: only its representation changes."""
        if media.as_kind == "Table":
            from setpoint.cluster.endpoints.tables import WatchTables

            tables = WatchTables(rt, include_object=media.include_object or "Metadata",
                                 table_version=media.version)

            def bookmark_table(obj: Obj) -> Obj:
                try:
                    return tables(obj)
                except (KeyError, TypeError, ValueError, AttributeError):
                    return obj
            return (lambda obj: tables(present(rt, obj))), bookmark_table
        if media.as_kind == "PartialObjectMetadata":
            as_partial = partial(partial_metadata, version=media.version)
            return as_partial, partial(_partial_bookmark, version=media.version)
        # PartialObjectMetadataList: no event's object is a list, so the transformation
        # fails on each and watchEmbeddedEncoder.doEncode passes the object on as it is, to
        # an encoder of the meta.k8s.io codecs (targetEncodingForTransform), which cannot
        # encode it: the stream ends at the first event (WatchServer.HandleHTTP, on the
        # encoder's error); only ERROR events, a Status, get through (``_watch_events``)
        return (lambda obj: present(rt, obj)), None


def requesting_user(request: Request) -> Obj:
    """Who the request acts as (the cluster's own token acts as the admin)."""
    return request.user or reviews.ADMIN_USER


async def read_converted(webhooks: Callable[[], WebhookAdmission], request: Request,
                         rt: ResourceType, steps: Callable[[], Steps[T]]) -> T:
    """Run a read, through the CRD's conversion webhook when it has one (``webhooks``
    makes the dispatcher that runs it, on first use)."""
    if rt.conversion_webhook is None:
        return run_sync(steps())
    result, _ = await webhooks().run(steps, requesting_user(request))
    return result


def _as_stored(obj: Obj) -> Obj:
    return obj


_METADATA_LIST = "PartialObjectMetadataList"

# the stream serializer of protobuf (negotiate.go MediaTypesForSerializer: ";stream=watch")
_PROTOBUF_WATCH = "application/vnd.kubernetes.protobuf;stream=watch"


def _watch_content_type(media: MediaType) -> str:
    return _PROTOBUF_WATCH if media.is_protobuf else "application/json"


def _protobuf_frame(event_type: str, obj: Obj) -> bytes:
    """One event of a protobuf watch stream (the protobuf serializer's LengthDelimitedFramer
    around a meta/v1 WatchEvent whose object is the kind's envelope, a Status for ERROR)."""
    from setpoint.machinery.protobuf import encode_watch_event

    return encode_watch_event(event_type, obj)


def _error_event(status: Obj, media: MediaType) -> Response:
    """A watch that is one ERROR event, in the negotiated stream."""
    if media.is_protobuf:
        return Response(_protobuf_frame("ERROR", status), 200, _PROTOBUF_WATCH)
    return Response(gojson.dumps({"type": "ERROR", "object": status}) + b"\n", 200,
                    "application/json")


def _nothing() -> None:
    """A streamed LIST has nothing to stop when its client leaves: the page is taken."""
