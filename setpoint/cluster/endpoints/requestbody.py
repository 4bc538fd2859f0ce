"""A request's body: read within the size limit, decoded by its Content-Type.

As k8s.io/apiserver's handlers (rest.go ``limitedReadBody``; create.go, update.go and
delete.go's decoders): a body over the limit is a 413; JSON, YAML and, for the kinds it
covers, Kubernetes protobuf decode; any other Content-Type is a 415 naming the accepted ones.
DeleteOptions come from the body when there is one, else from the query."""

from __future__ import annotations

import copy

from setpoint.cluster.endpoints.http import BodyTooLarge, Request
from setpoint.cluster.endpoints.typedbodies import (
    decode_delete_options,
    undecodable_delete_options,
)
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded, check_type_meta, parse_body
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError

MAX_BODY = 3 * 1024 * 1024
PROTOBUF = "application/vnd.kubernetes.protobuf"
BODY_TYPES = ("application/json", "application/yaml")


async def read_body(request: Request) -> bytes:
    """The raw body, at most :data:`MAX_BODY` bytes."""
    try:
        return await request.body(MAX_BODY)
    except BodyTooLarge:
        raise errors.request_entity_too_large(f"limit is {MAX_BODY}") from None


async def decode_object(request: Request, rt: ResourceType, opts: WriteOptions) -> Decoded:
    """The object a create or update sends (duplicate fields tracked unless ignored)."""
    return await decode_body(request, rt.api_version, rt.kind,
                             track_duplicates=opts.field_validation != "Ignore",
                             into_struct=not rt.is_custom)


async def delete_options(request: Request, rt: ResourceType,
                         query: dict[str, str]) -> DeleteOptions:
    """handlers/delete.go: the body, when there is one, is all of the options."""
    raw = await read_body(request)
    if not raw:
        return DeleteOptions.parse(query, None)
    try:
        decoded = await decode_body(request, rt.api_version, "DeleteOptions", raw=raw)
    except StatusError as exc:
        raise undecodable_delete_options(exc) from None
    return DeleteOptions.parse({}, decode_delete_options(decoded.obj))


async def decode_body(request: Request, api_version: str, kind: str, *,
                      track_duplicates: bool = False, optional: bool = False,
                      raw: bytes | None = None, into_struct: bool = True) -> Decoded:
    """A request body in JSON, YAML or Kubernetes protobuf, as a JSON-compatible value."""
    ctype = request.content_type or "application/json"
    if raw is None:
        raw = await read_body(request)
    if optional and not raw.strip():
        return Decoded(None)
    if ctype == PROTOBUF:
        from setpoint.machinery import protobuf

        if not protobuf.supports(api_version, kind):
            raise errors.unsupported_media_type("application/json, application/yaml")
        return Decoded(protobuf.decode_body(raw, api_version=api_version, kind=kind))
    if ctype not in BODY_TYPES:
        raise errors.unsupported_media_type(
            "application/json, application/yaml, application/vnd.kubernetes.protobuf")
    decoded = parse_body(raw, ctype, kind=kind, track_duplicates=track_duplicates,
                         into_struct=into_struct)
    check_type_meta(decoded.obj, kind, raw)
    return decoded


def fresh_copy(body: Decoded) -> Decoded:
    """A body for one run of a write: a run changes its object, and a write whose object
    moved on while webhooks answered runs again from the body as it was sent."""
    return Decoded(copy.deepcopy(body.obj), body.duplicates, body.unknown)
