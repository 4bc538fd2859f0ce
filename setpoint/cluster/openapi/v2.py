"""/openapi/v2: the whole API as one Swagger 2.0 document, in JSON or gnostic protobuf.

kubectl up to 1.27 reads this document for ``apply`` (its strategic merge patches follow the
definitions' ``x-kubernetes-patch-strategy`` and ``x-kubernetes-patch-merge-key``; the PATCH
operations' ``x-kubernetes-group-version-kind`` and parameters tell it whether the server
validates fields and takes dry runs), ``explain`` and client-side validation. It asks for the
protobuf form (``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``).

The document holds the same operations as the /openapi/v3 documents, rewritten in Swagger 2.0
terms (``consumes``/``produces``, body and non-body parameters, ``#/definitions/``
references), every definition they reach, and each served CRD version as apiextensions
publishes it in v2. ``OpenAPIV2Service`` builds it when the registry's types change, serializes
it once and derives the protobuf form and the ETag from those bytes, as kube-openapi does: the
ETag is the upper-case hex SHA-512 of the JSON, shared by both forms (responses vary by Accept).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from email.utils import formatdate, parsedate_to_datetime
from typing import Any, Protocol

import orjson

from setpoint.cluster.openapi.schemas import REF_PREFIX
from setpoint.cluster.openapi.v2_schemas import DEF_PREFIX, closure, crd_definitions, refs_in
from setpoint.cluster.openapi.v3 import INFO, openapi_document, openapi_index_paths
from setpoint.cluster.registry import Registry
from setpoint.machinery.acceptheader import parse_accept
from setpoint.machinery.objects import Obj
from setpoint.machinery.protobuf.openapiv2 import encode_document

JSON = "application/json"
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# the subtypes the handler accepts, in its order; the @ spelling is deprecated, still sent by
# kubectl up to 1.27, and answered with the dotted content type
_ACCEPTED = (("application", "json", JSON),
             ("application", "com.github.proto-openapi.spec.v2@v1.0+protobuf", PROTOBUF),
             ("application", "com.github.proto-openapi.spec.v2.v1.0+protobuf", PROTOBUF))

SECURITY_DEFINITIONS = {"BearerToken": {"description": "Bearer Token authentication",
                                        "in": "header", "name": "authorization",
                                        "type": "apiKey"}}
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
# the order of the apiserver's produces and consumes lists
_MEDIA_ORDER = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
                "application/json;stream=watch",
                "application/vnd.kubernetes.protobuf;stream=watch",
                "application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json", "application/apply-patch+yaml")


def swagger_document(registry: Registry) -> Obj:
    """The /openapi/v2 document of the types ``registry`` serves."""
    paths: Obj = {}
    for path in openapi_index_paths(registry):
        doc = openapi_document(registry, path)
        if doc is not None:
            paths.update({p: _path_item(item) for p, item in doc.get("paths", {}).items()})
    custom: dict[str, Obj] = {}
    for rt in registry.all():
        if rt.is_custom and rt.crd is not None and rt.discoverable:
            custom.update(crd_definitions(rt.crd, rt.version))
    return {
        "definitions": closure(refs_in(paths), custom),
        "info": dict(INFO),
        "paths": dict(sorted(paths.items())),
        "security": [{"BearerToken": []}],
        "securityDefinitions": SECURITY_DEFINITIONS,
        "swagger": "2.0",
    }


# -- operations: OpenAPI v3 -> Swagger 2.0 --------------------------------------------------

def _path_item(item: Mapping[str, Any]) -> Obj:
    out: Obj = {m: _operation(item[m]) for m in _METHODS if m in item}
    if item.get("parameters"):
        out["parameters"] = [_parameter(p) for p in item["parameters"]]
    return out


def _operation(op: Mapping[str, Any]) -> Obj:
    produces = _ordered({t for r in op.get("responses", {}).values()
                         for t in r.get("content", {})})
    params = [_parameter(p) for p in op.get("parameters", ())]
    body = op.get("requestBody")
    if body is not None:
        content: Mapping[str, Any] = body.get("content") or {}
        consumes = _ordered(set(content))
        first: Mapping[str, Any] = next(iter(content.values()), {})
        schema = first.get("schema", {})
        param: Obj = {"in": "body", "name": "body", "schema": _schema(schema)}
        if body.get("required"):
            param["required"] = True
        params.append(param)
    else:
        # resource operations take any body; discovery answers in the media types it produces
        consumes = ["*/*"] if "x-kubernetes-action" in op else produces
    responses: Obj = {}
    for code, response in op.get("responses", {}).items():
        out: Obj = {"description": response.get("description", "")}
        content = response.get("content") or {}
        if content:
            out["schema"] = _schema(next(iter(content.values())).get("schema", {}))
        responses[code] = out
    responses["401"] = {"description": "Unauthorized"}
    v2: Obj = {"consumes": consumes, "produces": produces, "responses": responses,
               "schemes": ["https"]}
    if params:
        v2["parameters"] = sorted(params, key=lambda p: p["name"])
    for key, value in op.items():
        if key in ("tags", "description", "operationId") or key.startswith("x-"):
            v2[key] = value
    return v2


def _parameter(p: Mapping[str, Any]) -> Obj:
    out: Obj = {k: p[k] for k in ("name", "in", "description", "required") if k in p}
    out.update(p.get("schema") or {})  # Swagger 2.0 puts type and uniqueItems on the parameter
    return out


def _schema(node: Any) -> Any:
    """A v3 schema of a request or response in v2 terms: definitions references, no allOf."""
    if isinstance(node, list):
        return [_schema(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": all_of[0]["$ref"]}
    out: Obj = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = DEF_PREFIX + value.removeprefix(REF_PREFIX)
        else:
            out[key] = _schema(value)
    return out


def _ordered(media: set[str]) -> list[str]:
    rank = {m: i for i, m in enumerate(_MEDIA_ORDER)}
    return sorted(media, key=lambda m: (rank.get(m, len(rank)), m))


# -- content negotiation and caching -------------------------------------------------------

def negotiate(accept: str | None) -> str | None:
    """The content type the apiserver answers ``Accept`` with, or None for its 406.

    kube-openapi sorts the Accept clauses as goautoneg does (by q, then concrete types before
    wildcards, q=0 included) and serves the first clause one of its types matches.
    """
    for kind, subtype in accept_clauses(accept or "*/*"):
        for want_type, want_subtype, content_type in _ACCEPTED:
            if kind in (want_type, "*") and subtype in (want_subtype, "*"):
                return content_type
    return None


def accept_clauses(header: str) -> list[tuple[str, str]]:
    """The (type, subtype) of each Accept clause in goautoneg's ``ParseAccept`` order."""
    return [(clause.type, clause.subtype) for clause in parse_accept(header)]


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weak comparison, ``*``), as net/http reads it."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag.removeprefix("W/"):
            return True
    return False


class _Built:
    __slots__ = ("etag", "generation", "json", "last_modified", "protobuf")

    def __init__(self, generation: tuple[int, int], body: bytes) -> None:
        self.generation = generation
        self.json = body
        self.etag = '"' + hashlib.sha512(body).hexdigest().upper() + '"'
        self.last_modified = formatdate(time.time(), usegmt=True)
        self.protobuf: bytes | None = None


class AggregatedSpecs(Protocol):
    """The aggregated APIs' documents (the aggregator's ``OpenAPIV2Aggregator``)."""

    generation: int

    def merge(self, document: Obj) -> Obj: ...


class OpenAPIV2Service:
    """The serialized /openapi/v2 document, rebuilt when the registry's types or the
    aggregated APIs' documents change.

    The JSON is built on first use after a change; the protobuf form is derived from the
    same document on its first request.
    """

    def __init__(self, registry: Registry, aggregated: AggregatedSpecs | None = None) -> None:
        self._registry = registry
        self._aggregated = aggregated
        self._built: _Built | None = None
        self._lock = threading.Lock()

    def json(self) -> bytes:
        """The document as JSON (``application/json``)."""
        return self._current().json

    def protobuf(self) -> bytes:
        """The document as gnostic's ``openapi.v2.Document`` protobuf message."""
        built = self._current()
        with self._lock:
            if built.protobuf is None:
                built.protobuf = encode_document(orjson.loads(built.json))
            return built.protobuf

    @property
    def etag(self) -> str:
        """The quoted ETag of both forms: the upper-case hex SHA-512 of the JSON."""
        return self._current().etag

    @property
    def last_modified(self) -> str:
        """When the current document was built, as an HTTP date (``Last-Modified``)."""
        return self._current().last_modified

    def not_modified(self, if_none_match: str | None, if_modified_since: str | None) -> bool:
        """Whether a GET with these headers gets 304, by net/http's ServeContent rules.

        If-None-Match decides when present; otherwise If-Modified-Since at or after the
        document's build time (to the second) does.
        """
        built = self._current()
        if if_none_match:
            return etag_matches(if_none_match, built.etag)
        if not if_modified_since:
            return False
        try:
            since = parsedate_to_datetime(if_modified_since).timestamp()
        except (TypeError, ValueError):
            return False
        return parsedate_to_datetime(built.last_modified).timestamp() <= since

    def _current(self) -> _Built:
        aggregated = self._aggregated
        generation = (self._registry.generation,
                      aggregated.generation if aggregated is not None else 0)
        with self._lock:
            built = self._built
            if built is not None and built.generation == generation:
                return built
            document = swagger_document(self._registry)
            if aggregated is not None:
                document = aggregated.merge(document)
            body = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
            if built is not None and body == built.json:
                built.generation = generation  # same document: keep its ETag and date
                return built
            self._built = _Built(generation, body)
            return self._built


__all__ = ["JSON", "PROTOBUF", "OpenAPIV2Service", "etag_matches", "negotiate",
           "swagger_document"]
