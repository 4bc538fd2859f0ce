"""Content negotiation: which representation a request's Accept header asks for."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from setpoint.machinery import errors
from setpoint.machinery.acceptheader import AcceptClause, parse_accept

SUPPORTED = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass(frozen=True, slots=True)
class MediaType:
    """The media type an answer is encoded in, as negotiated from Accept."""

    type: str = "application/json"
    as_kind: str = ""  # Table, PartialObjectMetadata(List), APIGroupDiscoveryList
    group: str = ""
    version: str = ""
    include_object: str = ""
    # the chosen clause's "pretty=1" (acceptMediaTypeOptions), one way to the pretty
    # serializer; the query and the User-Agent are the other (prettyprint.py)
    pretty: bool = False

    @property
    def is_yaml(self) -> bool:
        return self.type == "application/yaml"

    @property
    def is_protobuf(self) -> bool:
        return self.type == PROTOBUF

    @property
    def content_type(self) -> str:
        if self.as_kind:
            return f"{self.type};g={self.group};v={self.version};as={self.as_kind}"
        return self.type


JSON = MediaType()


# The serializers kube-apiserver negotiates among, in SupportedMediaTypes order (the legacy
# codecs' and a CRD's alike, CBOR being off in 1.32); YAML has no stream serializer.
_SERIALIZERS = (("application", "json"), ("application", "yaml"),
                ("application", "vnd.kubernetes.protobuf"))


def _matches(clause: AcceptClause, mtype: str, subtype: str) -> bool:
    """NegotiateMediaTypeOptions' match of a clause with a serializer."""
    return (clause.type == mtype and clause.subtype in (subtype, "*")) or (
        clause.type == "*" and clause.subtype == "*")


def _pretty(clause: AcceptClause) -> bool:
    """acceptMediaTypeOptions: ``pretty`` is asked by the value "1" alone."""
    return clause.param("pretty") == "1"


def _convert(clause: AcceptClause) -> tuple[str, str, str] | None:
    """The (group, version, kind) of the clause's as/g/v params, None when it has none of
    them (acceptMediaTypeOptions: any one of them asks for a conversion)."""
    if not (clause.has("as") or clause.has("g") or clause.has("v")):
        return None
    return clause.param("g"), clause.param("v"), clause.param("as")


def _options_allowed(clause: AcceptClause, subtype: str, *, server_version: str) -> bool:
    """acceptMediaTypeOptions' checks of "stream" and "sv" (an endpoint's AllowsStreamSchema
    takes "watch" only; AllowsServerVersion the scope's meta version, none for discovery)."""
    stream = clause.param("stream")
    if stream and (subtype == "yaml" or stream != "watch"):
        return False
    sv = clause.param("sv")
    return not sv or sv == server_version


def negotiate(accept: str | None, *, allow_table: bool = True,
              protobuf: bool = False) -> MediaType:
    """The best acceptable representation, or a 406. ``allow_table=False``: a
    clause asking for a Table is passed over (a watch-list request's endpoint restrictions,
    handlers/get.go watchListEndpointRestrictions). ``protobuf``: the endpoint answers a
    plain protobuf clause in protobuf (a built-in kind's object, list or write; its Table in
    protobuf is not offered, so such a clause is passed over)."""
    if not accept:
        return JSON
    if len(accept) <= _REMEMBERED_ACCEPT_LENGTH:
        # clients send the same few on every request
        return _remembered(accept, allow_table, protobuf)
    return _negotiate(accept, allow_table, protobuf)


# The subresource storages that are no TableConvertor (pkg/registry/core/pod/storage/
# storage.go EphemeralContainersREST, pkg/registry/certificates/certificates/storage/
# storage.go ApprovalREST): the installer leaves their scope's TableConvertor nil, so
# RequestScope.AllowsMediaTypeTransform (handlers/rest.go) passes a Table clause over and
# the next acceptable one (plain JSON, for kubectl) is served. Every other subresource's
# storage converts with its parent's store (StatusREST/ScaleREST ``ConvertToTable``).
_TABLELESS_SUBRESOURCES = frozenset({"ephemeralcontainers", "approval", "resize"})


def offers_table(subresource: str) -> bool:
    """Whether the endpoint of ``subresource`` ("" for the resource) can answer a Table."""
    return subresource not in _TABLELESS_SUBRESOURCES


_REMEMBERED_ACCEPT_LENGTH = 256


@functools.lru_cache(maxsize=256)
def _remembered(accept: str, allow_table: bool, protobuf: bool) -> MediaType:
    # (MediaType is frozen: one answer can be shared)
    return _negotiate(accept, allow_table, protobuf)


_METADATA_KINDS = frozenset({"PartialObjectMetadata", "PartialObjectMetadataList"})


def _negotiate(accept: str, allow_table: bool = True, protobuf: bool = False) -> MediaType:
    """NegotiateMediaTypeOptions under a resource's RequestScope (handlers/rest.go
    AllowsMediaTypeTransform): the clauses in goautoneg's order, each tried with every
    serializer it matches. Without a conversion a serializer must be a standard one (a
    custom resource's handler lists JSON and YAML); a Table is JSON or YAML only (Table has
    no protobuf encoding in 1.32, so such a clause is passed over, and a request with no
    other acceptable clause is the 406 below); metadata-only conversions take any."""
    for clause in parse_accept(accept):
        for mtype, subtype in _SERIALIZERS:
            if not _matches(clause, mtype, subtype):
                continue
            if not _options_allowed(clause, subtype, server_version="v1"):
                continue
            media_type = f"{mtype}/{subtype}"
            target = _convert(clause)
            if target is None:
                if media_type == PROTOBUF and not protobuf:
                    continue
                return MediaType(media_type, pretty=_pretty(clause))
            g, v, as_kind = target
            if g != "meta.k8s.io" or v not in ("v1", "v1beta1"):
                continue
            if as_kind == "Table":
                # (includeObject is a query parameter, TableOptions: an Accept parameter of
                # that name is one acceptMediaTypeOptions does not recognize, and ignores)
                if allow_table and subtype in ("json", "yaml"):
                    return MediaType(media_type, as_kind, g, v, pretty=_pretty(clause))
            elif as_kind in _METADATA_KINDS:
                return MediaType(media_type, as_kind, g, v, pretty=_pretty(clause))
    raise errors.not_acceptable(f"only the following media types are accepted: {SUPPORTED}")


def _unconverted(accept: str) -> MediaType | None:
    """NegotiateMediaTypeOptions under DefaultEndpointRestrictions: the first clause, in
    goautoneg's order, that a serializer matches with neither a conversion (as/g/v) nor a
    server version (sv); None when there is none."""
    for clause in parse_accept(accept):
        for mtype, subtype in _SERIALIZERS:
            if _matches(clause, mtype, subtype) and _convert(clause) is None \
                    and _options_allowed(clause, subtype, server_version=""):
                return MediaType(f"{mtype}/{subtype}", pretty=_pretty(clause))
    return None


@functools.lru_cache(maxsize=64)
def negotiate_error(accept: str | None) -> MediaType:
    """The representation of an error's Status (responsewriters.ErrorNegotiated: the
    request's Accept under DefaultEndpointRestrictions, so no ``as=`` clause is taken). When
    nothing is acceptable the Status is written as JSON all the same, indented
    (WriteObjectNegotiated's WriteRawJSON for an unsuccessful code: ``json.MarshalIndent``).
    Every serializer the apiserver negotiates with (the legacy codecs, a CRD's) offers
    protobuf, in which a Status has its message."""
    if not accept:
        return JSON
    return _unconverted(accept) or RAW_JSON


# responsewriters.WriteRawJSON's answer: JSON as json.MarshalIndent(v, "", "  ") writes it
RAW_JSON = MediaType(pretty=True)


def _aggregated(accept: str) -> MediaType | None:
    """aggregated/wrapper.go: the Accept negotiated under DiscoveryEndpointRestrictions,
    which take only a conversion to apidiscovery.k8s.io v2/v2beta1 APIGroupDiscoveryList, in
    any of the serializers (JSON, YAML, protobuf)."""
    for clause in parse_accept(accept):
        target = _convert(clause)
        if target is None or target[0] != "apidiscovery.k8s.io" or target[1] not in (
                "v2", "v2beta1") or target[2] != "APIGroupDiscoveryList":
            continue
        for mtype, subtype in _SERIALIZERS:
            if _matches(clause, mtype, subtype) and _options_allowed(
                    clause, subtype, server_version=""):
                return MediaType(f"{mtype}/{subtype}", target[2], target[0], target[1],
                                 pretty=_pretty(clause))
    return None


@functools.lru_cache(maxsize=64)
def negotiate_discovery(accept: str, *, aggregated: bool) -> MediaType:
    """The representation of a discovery document, or 406.

    k8s.io/apiserver pkg/endpoints/discovery: ``/api`` and ``/apis`` negotiate with
    aggregated/negotiation.go ``DiscoveryEndpointRestrictions`` (a clause converting to
    anything but apidiscovery.k8s.io v2/v2beta1 ``APIGroupDiscoveryList`` is unacceptable),
    then, failing that, as the other discovery documents (``/api/v1``, ``/apis/<group>``,
    ``/apis/<group>/<version>``) do, with ``DefaultEndpointRestrictions``: no conversion at
    all. Clauses go in goautoneg's order (q, then specificity); every document is served in
    JSON, YAML or protobuf. A request none of whose clauses is left is a 406.
    """
    if not accept:
        return JSON
    if aggregated:
        media = _aggregated(accept)
        if media is not None:
            return media
    media = _unconverted(accept)
    if media is None:
        raise errors.not_acceptable(
            f"only the following media types are accepted: {SUPPORTED}")
    return media


# go-restful's default for a request without a Content-Type (route.go matchesContentType)
_OCTET = "application/octet-stream"


def restful_consumes(content_type: str, consumes: tuple[str, ...]) -> bool:
    """go-restful's Route.matchesContentType (github.com/emicklei/go-restful/v3 route.go, the
    v3.11.0 of kube-apiserver 1.32) for a PATCH route: any comma-separated entry, without
    its parameters and spaces, that is one of ``consumes``, exactly (case included). A PATCH
    without a Content-Type is taken for application/octet-stream."""
    for entry in (content_type or _OCTET).split(","):
        if entry.split(";", 1)[0].strip(" ") in consumes:
            return True
    return False


def restful_unsupported_content_type(content_length: str | None,
                                     chunked: bool) -> errors.StatusError:
    """What go-restful answers when no route consumes the Content-Type (jsr311.go
    detectRoute), as the apiserver's serviceErrorHandler writes it (NewGenericServerResponse:
    the message is go-restful's, details empty). Only a request with a body it knows the
    length of (``ContentLength > 0``) is refused at that stage; any other goes on to the
    Accept stage with no route left, where a POST/PUT/PATCH without a Content-Length header
    (none sent, or chunked: Go's server drops it) is a 415 and one with "Content-Length: 0"
    a 406, each naming the representations of no route: none."""
    length = None if chunked else content_length
    if length is not None and length.strip().isdigit() and int(length) > 0:
        return errors.StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type",
                                  keep_empty_details=True)
    return restful_not_acceptable("PATCH", content_length, chunked, ())


# What a built-in resource's go-restful routes produce (k8s.io/apiserver pkg/endpoints/
# installer.go: ``negotiation.MediaTypesForSerializer`` of the legacy codecs, CBOR being off in
# 1.32): every route its media types, a LIST route (which also serves ``?watch=true``) and the
# legacy /watch/ routes the stream types after them.
ROUTE_MEDIA_TYPES = ("application/json", "application/yaml",
                     "application/vnd.kubernetes.protobuf")
LIST_ROUTE_MEDIA_TYPES = (*ROUTE_MEDIA_TYPES, "application/json;stream=watch",
                          "application/vnd.kubernetes.protobuf;stream=watch")


def restful_accepts(accept: str | None, produces: tuple[str, ...]) -> bool:
    """go-restful's Route.matchesAccept (route.go, v3.11.0): any comma-separated entry of the
    Accept header ("*/*" when absent), cut at its first ";" and trimmed of spaces, that is
    "*/*" or exactly (case included) one of ``produces``; "application/*" is not."""
    if accept is not None and len(accept) <= _REMEMBERED_ACCEPT_LENGTH:
        return _remembered_accepts(accept, produces)  # the same few Accepts every request
    return _accepts(accept, produces)


@functools.lru_cache(maxsize=256)
def _remembered_accepts(accept: str, produces: tuple[str, ...]) -> bool:
    return _accepts(accept, produces)


def _accepts(accept: str | None, produces: tuple[str, ...]) -> bool:
    for entry in (accept or "*/*").split(","):
        mime = entry.split(";", 1)[0].strip(" ")
        if mime == "*/*" or mime in produces:
            return True
    return False


def restful_accept(method: str, headers: Mapping[str, str], custom: bool,
                   produces: tuple[str, ...]) -> None:
    """A built-in resource's route is chosen by go-restful, which refuses an Accept none of
    its representations matches before the handler negotiates (jsr311.go detectRoute, after
    the method and the Content-Type); the CRD handler has no such stage."""
    if custom or restful_accepts(headers.get("accept"), produces):
        return
    raise restful_not_acceptable(method, headers.get("content-length"),
                                 "chunked" in headers.get("transfer-encoding", "").lower(),
                                 produces)


def restful_not_acceptable(method: str, content_length: str | None, chunked: bool,
                           produces: tuple[str, ...]) -> errors.StatusError:
    """go-restful's answer when no route left produces what the Accept asks for (jsr311.go
    detectRoute), as the apiserver's serviceErrorHandler writes it: a POST, PUT or PATCH
    without a Content-Length header (none sent, or chunked: Go's server drops it) is a 415,
    anything else a 406, each naming what the routes produce."""
    available = ", ".join(produces)
    if method in ("POST", "PUT", "PATCH") and (chunked or content_length is None):
        return errors.StatusError(
            415, "UnsupportedMediaType",
            f"415: Unsupported Media Type\n\nAvailable representations: {available}",
            keep_empty_details=True)
    return errors.StatusError(406, "NotAcceptable",
                              f"406: Not Acceptable\n\nAvailable representations: {available}",
                              keep_empty_details=True)
