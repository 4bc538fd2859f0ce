"""The reads of a collection: LIST (full objects, metadata only or a Table; JSON or YAML,
presented and encoded a chunk at a time) and WATCH (its events, converted by a CRD's webhook
when it has one), after the watch cache's freshness wait."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from setpoint.cluster.authorization import reviews
from setpoint.cluster.endpoints.http import Request, Response, StreamResponse
from setpoint.cluster.endpoints.listencoding import (
    LIST_CHUNK_ITEMS,
    encode_list,
    in_chunks,
    json_parts,
)
from setpoint.cluster.endpoints.negotiation import MediaType
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.endpoints.responses import encode, partial_metadata
from setpoint.cluster.endpoints.watch import CHANGE, WatchStream
from setpoint.cluster.registry import fieldlabels
from setpoint.cluster.registry.admissionpoints import ConversionPoint, Steps, run_sync
from setpoint.cluster.registry.listing import (
    cache_wait_revision,
    list_item,
    list_items_json,
    page_converted,
    too_large,
)
from setpoint.cluster.registry.options import ListOptions, validate_list_options
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors, fields
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer

T = TypeVar("T")


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


class CollectionReads:
    """LIST and WATCH of a resource type's objects, given the API server's parts."""

    def __init__(self, api: APIServer) -> None:
        self.api = api

    async def get(self, request: Request, rt: ResourceType, rp: ResourcePath, watch: bool,
                  media: MediaType) -> Response:
        """A GET of a collection (or of one object with ``watch``): its LIST or its WATCH."""
        opts = ListOptions.parse(request.query)
        opts.watch = watch
        validate_list_options(opts)
        if rp.name is not None:
            opts.field_selector = _named_watch_selector(rt, rp.name, opts.field_selector)
        ns = rp.namespace
        wanted = cache_wait_revision(opts)
        # a LIST that waited in vain answers the Timeout itself (listing.list_stored)
        if not await self.api.freshness.wait_until_fresh(wanted) and watch:
            # cacher.go Watch: the wait's error comes as the stream's one ERROR event
            error = too_large(wanted, self.api.store.revision).to_status()
            return Response(orjson.dumps({"type": "ERROR", "object": error}) + b"\n", 200,
                            "application/json")
        if not watch:
            return await self._list(request, rt, ns, opts, media)
        return await self._watch(request, rt, ns, opts, media)

    async def _list(self, request: Request, rt: ResourceType, ns: str | None,
                    opts: ListOptions, media: MediaType) -> Response:
        """A LIST in any representation (JSON or YAML; full objects, metadata only or a
        Table), its items presented and encoded a chunk at a time (``listencoding``)."""
        rest = self.api.rest
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
                self.api, request, rt,
                lambda: codec.present_all_steps(rt, stored, defaults=False))
            listed = page_converted(codec, rt, ns, opts, listed, converted)
            present = partial(codec.with_defaults, rt)
        elif codec.serves_stored(rt):
            chunk_json = partial(list_items_json, rt)  # spliced in as stored
        dumps = partial(encode, media=media)
        if media.as_kind == "Table":
            table = await self._table(rt, listed, media, present)
            body = await encode_list(table, _as_stored, dumps, yaml=media.is_yaml, key="rows")
        elif media.as_kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            list_meta = {k: v for k, v in listed["metadata"].items() if v != ""}
            body = await encode_list({
                "kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{media.version}",
                "metadata": list_meta, "items": listed["items"],
            }, lambda obj: partial_metadata(present(obj), media.version), dumps, yaml=media.is_yaml)
        elif chunk_json is not None and not media.is_yaml and len(
                listed["items"]) > LIST_CHUNK_ITEMS:
            # written a chunk at a time as the client reads it, never held whole: a LIST of
            # 100,000 would otherwise take a 50 MB body and as much in transport buffers,
            # which the allocator keeps once freed. Go's net/http chunks any answer of more
            # than 2 KiB written without a Content-Length (server.go bufferBeforeChunkingSize),
            # as kube-apiserver's list answers are (responsewriters/writers.go).
            # not long-running: dropped at the request timeout if its client stops reading
            return StreamResponse(json_parts(listed, _as_stored, dumps, chunk_json=chunk_json),
                                  _nothing, content_type=media.type, long_running=False)
        else:
            body = await encode_list(listed, lambda obj: list_item(rt, present(obj)), dumps,
                                     yaml=media.is_yaml,
                                     chunk_json=None if media.is_yaml else chunk_json)
        return Response(body, 200, media.type)

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
        rest = self.api.rest
        convert = rt.conversion_webhook is not None
        # objects converted by webhook are converted a batch at a time, outside the stream
        present = self._watch_presenter(rt, media, rest.present if not convert
                                        else rest.with_defaults)
        stream = WatchStream(rest, rt, ns, opts, present if not convert else _as_stored,
                             as_stored_json=not convert)
        if stream.error is not None:
            error = orjson.dumps({"type": "ERROR", "object": stream.error}) + b"\n"
            return Response(error, 200, "application/json")
        return StreamResponse(self._watch_events(stream, rt, present if convert else None),
                              stream.close, content_type="application/json",
                              ended=stream.wait_closed)

    async def _watch_events(self, stream: WatchStream, rt: ResourceType,
                            present: Callable[[Obj], Obj] | None) -> AsyncIterator[bytes]:
        self.api.track_watch(stream)
        try:
            async for batch in stream:
                if present is not None:
                    batch = await self._converted(rt, batch, present, stream)
                    if not batch:
                        continue
                yield b"".join(orjson.dumps({"type": t, "object": o}) + b"\n" for t, o in batch)
        finally:
            stream.close()
            self.api.untrack_watch(stream)

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
                self.api.webhook_client, ConversionPoint(rt, objects, rt.api_version)))
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

    def _watch_presenter(self, rt: ResourceType, media: MediaType,
                         present: Callable[[ResourceType, Obj], Obj]) -> Callable[[Obj], Obj]:
        if media.as_kind == "Table":
            from setpoint.cluster.endpoints.tables import WatchTables

            tables = WatchTables(rt, include_object=media.include_object or "Metadata",
                                 table_version=media.version)
            return lambda obj: tables(present(rt, obj))
        if media.as_kind.startswith("PartialObjectMetadata"):
            return lambda obj: partial_metadata(obj, media.version)
        return lambda obj: present(rt, obj)


def requesting_user(request: Request) -> Obj:
    """Who the request acts as (the cluster's own token acts as the admin)."""
    return request.user or reviews.ADMIN_USER


async def read_converted(api: APIServer, request: Request, rt: ResourceType,
                         steps: Callable[[], Steps[T]]) -> T:
    """Run a read, through the CRD's conversion webhook when it has one."""
    if rt.conversion_webhook is None:
        return run_sync(steps())
    result, _ = await api.webhooks.run(steps, requesting_user(request))
    return result


def _as_stored(obj: Obj) -> Obj:
    return obj


def _nothing() -> None:
    """A streamed LIST has nothing to stop when its client leaves: the page is taken."""
