"""Bodies the server acts on without storing them, decoded into their Go types first.

TokenRequest, Binding, Eviction and the access reviews go through the create handler's typed
decoder (k8s.io/apiserver/pkg/endpoints/handlers/create.go, transformDecodeError): a value of
the wrong JSON type is a 400 "... cannot be handled as a <Kind>". DeleteOptions are decoded by
the delete handler with the meta internal-version codecs, whose errors 1.32 answers as a
500 in the decoder's own words (handlers/delete.go, ``scope.err(err)``).
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.serializer.typeddecode import decode_builtin
from setpoint.machinery import errors
from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.schema import definitions

_NOT_AN_OBJECT = ("couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go "
                  'value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                  'Kind string "json:\\"kind,omitempty\\"" }')
# where k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go makes its Scheme
# (its name as the scheme reports it, kubernetes/kubernetes#139487)
_META_SCHEME = "pkg/apis/meta/internalversion/scheme/register.go:27"
_DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"



def _type_meta_error(obj: dict[str, Any]) -> str | None:
    """The json serializer reads apiVersion and kind first: either of the wrong type fails."""
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return (f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                    f"{unmarshal_kind(value)} into Go struct field .{key} of type string")
    return None


def decode_kind(obj: Any, api_version: str, kind: str, literals: bytes | None = None) -> Any:
    """``obj`` as the typed decoder of ``kind`` leaves it (unknown fields dropped);
    ``literals``: the JSON text it was read from (typeddecode.decode_builtin)."""
    if obj is None:
        return obj
    if not isinstance(obj, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): "
                                 + _NOT_AN_OBJECT.replace("{}", unmarshal_kind(obj), 1))
    problem = _type_meta_error(obj)
    if problem is not None:
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): "
                                 + problem)
    group, _, version = api_version.rpartition("/")
    schema = definitions().for_kind(group, version, kind)
    if schema is None:
        return obj
    decoded, _ = decode_builtin(obj, schema, kind, literals=literals)
    return decoded


# What the meta internal-version scheme can make of a body's kind
# (k8s.io/apimachinery/pkg/apis/meta/internalversion/register.go): kinds it takes at any
# version (AddUnversionedTypes), and kinds it knows at one group/version.
_UNVERSIONED_KINDS = {"DeleteOptions", "CreateOptions", "UpdateOptions", "Status", "APIVersions",
                      "APIGroupList", "APIGroup", "APIResourceList"}
_META_KINDS = {"Table", "TableOptions", "PartialObjectMetadata", "PartialObjectMetadataList"}
_KNOWN_KINDS = {"meta.k8s.io/v1": _META_KINDS | {"WatchEvent", "ListOptions", "GetOptions",
                                                 "PatchOptions"},
                "meta.k8s.io/v1beta1": _META_KINDS}


def delete_options_decode_error(message: str) -> errors.StatusError:
    """kube-apiserver 1.32 answers a DeleteOptions body it cannot decode with the decoder's
    bare error: not an APIStatus, so a 500 with no reason (handlers/delete.go ``scope.err``,
    responsewriters.ErrorToAPIStatus; 1.35 made it a 400, kubernetes/kubernetes#133358)."""
    return errors.StatusError(500, "", message)


def undecodable_delete_options(exc: errors.StatusError) -> errors.StatusError:
    """A body the serializer could not parse, in the serializer's own words (without the
    create handler's framing and excerpt)."""
    if exc.code != 400:
        return exc
    detail = exc.message.removeprefix(
        "the object provided is unrecognized (must be of type DeleteOptions): ")
    if detail.startswith("couldn't get version/kind") and detail.endswith(")"):
        detail = detail.rpartition(" (")[0]
    return delete_options_decode_error(detail)


def decode_delete_options(obj: Any) -> dict[str, Any]:
    """A DELETE's body decoded as the delete handler does: by the meta internal-version
    codecs into a DeleteOptions. Any apiVersion of kind DeleteOptions is taken (the kind is
    unversioned there); another kind is not registered, or not convertible."""
    if obj is None:
        return {}  # JSON null decodes as an empty DeleteOptions
    if not isinstance(obj, dict):
        raise delete_options_decode_error(_NOT_AN_OBJECT.replace("{}", unmarshal_kind(obj), 1))
    problem = _type_meta_error(obj)
    if problem is not None:
        raise delete_options_decode_error(problem)
    kind = obj.get("kind") or "DeleteOptions"
    api_version = obj.get("apiVersion") or "meta.k8s.io/v1"
    if api_version.count("/") > 1:
        raise delete_options_decode_error(f"unexpected GroupVersion string: {api_version}")
    if kind != "DeleteOptions":
        if kind in _UNVERSIONED_KINDS or kind in _KNOWN_KINDS.get(api_version, ()):
            raise delete_options_decode_error(
                f"converting (v1.{kind}) to (v1.DeleteOptions): unknown conversion")
        raise delete_options_decode_error(
            f'no kind "{kind}" is registered for version "{api_version}" in scheme '
            f'"{_META_SCHEME}"')
    try:
        decoded, _ = decode_builtin(obj, definitions().get(_DELETE_OPTIONS), "DeleteOptions")
    except errors.StatusError as err:
        raise delete_options_decode_error(
            err.message.split("cannot be handled as a DeleteOptions: ", 1)[-1]) from None
    return decoded
