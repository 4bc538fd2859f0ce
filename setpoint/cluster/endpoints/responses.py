"""The answers of the HTTP front: objects, Status errors and text, in the negotiated
representation (JSON, YAML, Table, PartialObjectMetadata), with their Warning headers."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson

from setpoint.cluster.endpoints.http import Response
from setpoint.cluster.endpoints.negotiation import PROTOBUF, MediaType
from setpoint.cluster.endpoints.warningheaders import warning_headers
from setpoint.cluster.registry.genericstore import WriteResult
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors, fielderrors, gojson
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

log = logging.getLogger(__name__)


def encode(obj: Any, media: MediaType, *, whole: bool = True) -> bytes:
    """``obj`` in the negotiated representation (JSON, YAML or protobuf: raises
    ProtobufError for a value its kind's message cannot hold). JSON that is a ``whole``
    answer ends with the newline ``json.NewEncoder(w).Encode`` writes after the value
    (apimachinery runtime/serializer/json/json.go ``doEncode``), appended by orjson as it
    writes (no copy); a part of a list's answer, spliced in, has none."""
    if media.is_protobuf:
        from setpoint.machinery.protobuf import envelope

        try:
            return envelope.encode(obj)
        except UnicodeEncodeError:
            # a URL's bytes that are not UTF-8, quoted in a Status: written as U+FFFD, as the
            # JSON answer writes them
            return envelope.encode(valid_text(obj))
    if media.is_yaml:
        # on first use: PyYAML is not loaded before the first request (start-up time)
        from setpoint.cluster.serializer import yamlencode

        return yamlencode.dumps(valid_text(obj))
    option = _APPEND_NEWLINE if whole else None
    try:
        return gojson.dumps(obj, option)
    except TypeError:
        # lone surrogates, the bytes of a URL that are not UTF-8 (http.Request.path) quoted
        # in an answer: encoding/json writes each such byte as the escape "\ufffd"
        # (encode.go appendString), a real U+FFFD as it is
        marks = [0]
        text = gojson.dumps(valid_text(obj, marks), option)
        if marks[0] != text.count(_INVALID_BYTE_UTF8):
            # (the stand-in was in the value itself: the bytes are written as U+FFFD)
            return gojson.dumps(valid_text(obj), option)
        return text.replace(_INVALID_BYTE_UTF8, b"\\ufffd")


_APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE


def stored_answer(served: bytes) -> bytes:
    """An object's stored JSON as the answer to its GET or write: the stored bytes are
    what ``json.Marshal`` writes (the store splices them into lists and watch events as
    they are), and ``Encoder.Encode`` adds its newline to the answer."""
    return served + b"\n"

# stands for an invalid byte while orjson writes the text (a noncharacter, which no
# Kubernetes text holds; the count above tells when one does)
_INVALID_BYTE = "\U0010ffff"
_INVALID_BYTE_UTF8 = _INVALID_BYTE.encode()
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(value: Any, marks: list[int] | None = None) -> Any:
    """``value`` with its lone surrogates as U+FFFD, or as the stand-in for an invalid
    byte (counted in ``marks``) when ``marks`` is given."""
    if isinstance(value, str):
        if marks is None:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        marks[0] += value.count(_INVALID_BYTE)
        text, count = _SURROGATE.subn(_INVALID_BYTE, value)
        marks[0] += count
        return text
    if isinstance(value, dict):
        return {valid_text(k, marks): valid_text(v, marks) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_text(v, marks) for v in value]
    return value


def json_response(obj: Any, status: int = 200, media: MediaType | None = None,
          warnings: list[str] | None = None) -> Response:
    media = media or MediaType()
    if media.is_protobuf:
        body, media = _protobuf_or_json(obj)
    else:
        body = encode(obj, media)
    # Table and PartialObjectMetadata answers are labelled plain JSON, as the apiserver does
    resp = Response(body, status, media.type, serialized=True, pretty=media.pretty)
    for header in warning_headers(warnings or ()):
        resp.add_header("Warning", header)
    return resp


def _protobuf_or_json(obj: Any) -> tuple[bytes, MediaType]:
    from setpoint.machinery.protobuf import ProtobufError  # (not loaded at start)

    try:
        return encode(obj, _PROTOBUF), _PROTOBUF
    except ProtobufError as err:
        # a value of ours no message field can hold: a bug, answered as JSON rather than not
        log.warning("cannot encode %s in protobuf, answering JSON: %s",
                    obj.get("kind") if isinstance(obj, dict) else type(obj), err)
        return encode(obj, MediaType()), MediaType()


_PROTOBUF = MediaType(PROTOBUF)


def status_response(err: StatusError, warnings: list[str] | None = None,
                    media: MediaType | None = None) -> Response:
    """``err``'s Status, in JSON unless ``media`` (negotiation.negotiate_error's) is YAML."""
    recorded = [*(warnings or ()), *err.warnings]
    resp = json_response(err.to_status(), err.code, media, warnings=recorded)
    if err.retry_after is not None and err.code in (429, 503, 504):
        resp.set_header("Retry-After", str(err.retry_after))
    if err.code == 413:
        resp.set_header("Connection", "close")  # the unread rest of the body is not wanted
    return resp


def raw_json_response(obj: Any, status: int = 200) -> Response:
    """responsewriters.WriteRawJSON: a non-API object (``/version``, the root's paths) as
    ``json.MarshalIndent(obj, "", "  ")`` writes it, whatever the request asks."""
    return Response(gojson.indented(encode(obj, MediaType())), status, "application/json")


def text_response(body: str, status: int = 200) -> Response:
    return Response(body.encode(), status, "text/plain; charset=utf-8")


def with_table_options(media: MediaType, query: Mapping[str, str]) -> MediaType:
    """A Table's TableOptions, decoded from the query and checked by ValidateTableOptions
    (handlers/response.go optionsForTransform; apimachinery pkg/apis/meta/v1/validation).
    Called where Go calls it: once the read or the write is done (transformResponseObject),
    or once a watch's storage has answered (serveWatchHandler), so their errors come first."""
    if media.as_kind != "Table":
        return media
    include = query.get("includeObject", "")
    if include not in ("", "None", "Metadata", "Object"):
        cause = fielderrors.invalid("includeObject", include,
                                    "must be 'Metadata', 'Object', 'None', or empty")
        raise errors.bad_request(
            f"Unable to convert to Table as requested: {cause.field}: {cause.message}")
    return replace(media, include_object=include)


def render_object(rt: ResourceType, obj: Obj, media: MediaType,
                  status: int = 200, warnings: list[str] | None = None,
                  subresource: str = "") -> Response:
    """An object as the client asked for it: itself, its metadata or a one-row Table."""
    if media.as_kind == "Table":
        from setpoint.cluster.endpoints.tables import to_table

        table = to_table(rt, [obj], list_meta=None,
                         include_object=media.include_object or "Metadata",
                         now=datetime.now(UTC), table_version=media.version,
                         subresource=subresource)
        return json_response(table, status, media, warnings)
    if media.as_kind == "PartialObjectMetadata":
        return json_response(partial_metadata(obj, media.version), status, media, warnings)
    if media.as_kind == "PartialObjectMetadataList":
        # handlers/response.go asPartialObjectMetadataList: one object is not a list (the
        # transformation follows the read or the write, so a write is done all the same)
        return status_response(errors.not_acceptable(
            "you requested PartialObjectMetadataList, but the requested object is not a list "
            f"({internal_type_name(rt)})"))
    return json_response(obj, status, media, warnings)


def render_deleted(rt: ResourceType, out: Obj, media: MediaType, status: int,
                   warnings: list[str]) -> Response:
    """A DELETE's or DELETECOLLECTION's answer (handlers/delete.go: transformResponseObject,
    its Table options already checked): a Status as it is (response.go doTransformObject),
    the deleted object as render_object gives it, the deleted list as a Table of its rows or
    a PartialObjectMetadataList."""
    if out.get("kind") == "Status" or not media.as_kind:
        return json_response(out, status, media, warnings)
    if "items" not in out:
        return render_object(rt, out, media, status, warnings)
    if media.as_kind == "Table":
        from setpoint.cluster.endpoints.tables import to_table

        table = to_table(rt, out["items"], list_meta=out["metadata"],
                         include_object=media.include_object or "Metadata",
                         now=datetime.now(UTC), table_version=media.version)
        return json_response(table, status, media, warnings)
    if media.as_kind == "PartialObjectMetadataList":
        return json_response({
            "kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{media.version}",
            "metadata": {k: v for k, v in out["metadata"].items() if v != ""},
            "items": [partial_metadata(obj, media.version) for obj in out["items"]],
        }, status, media, warnings)
    return status_response(errors.not_acceptable(
        "you requested PartialObjectMetadata, but the requested object is a list "
        f"({internal_type_name(rt, is_list=True)})"))


def internal_type_name(rt: ResourceType, *, is_list: bool = False) -> str:
    """Go's ``%T`` of what the registry hands the handler: a built-in kind's internal type
    (k8s.io/kubernetes pkg/apis/<group's first label>, the core group's and events.k8s.io's
    Event in package ``core``), a custom resource's ``unstructured`` type."""
    if rt.is_custom:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    package = "core" if rt.group in ("", "events.k8s.io") else rt.group.split(".", 1)[0]
    if rt.group == "internal.apiserver.k8s.io":
        package = "apiserverinternal"
    return f"*{package}.{rt.kind}{'List' if is_list else ''}"


def render_write(rt: ResourceType, result: WriteResult, media: MediaType) -> Response:
    """A write's answer: the stored JSON as it is when the client takes plain JSON."""
    if result.obj.get("kind") == "Scale":
        if media.as_kind == "Table":  # the ScaleREST's ConvertToTable, as for a GET
            return render_object(rt, result.obj, media, result.status, result.warnings,
                                 subresource="scale")
        return json_response(result.obj, result.status,
                             MediaType(media.type, pretty=media.pretty), result.warnings)
    if result.served_json is not None and not media.as_kind and not media.is_yaml \
            and not media.is_protobuf:
        resp = Response(stored_answer(result.served_json), result.status, media.type,
                        serialized=True, pretty=media.pretty)
        for header in warning_headers(result.warnings):
            resp.add_header("Warning", header)
        return resp
    return render_object(rt, result.obj, media, result.status, result.warnings)


def partial_metadata(obj: Obj, version: str) -> Obj:
    """``obj`` as the PartialObjectMetadata a metadata-only client asks for."""
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": obj.get("metadata", {})}
