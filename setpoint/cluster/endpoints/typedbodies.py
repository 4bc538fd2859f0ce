"""Bodies the server acts on without storing them, decoded into their Go types first.

TokenRequest, Binding, Eviction and the access reviews go through the create handler's typed
decoder (k8s.io/apiserver/pkg/endpoints/handlers/create.go, transformDecodeError): a value of
the wrong JSON type is a 400 "... cannot be handled as a <Kind>". DeleteOptions are decoded by
the delete handler with the meta internal-version codecs, whose errors it answers as a plain
400 with the decoder's own words (handlers/delete.go, ``errors.NewBadRequest(err.Error())``).
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.serializer.decode import decode_builtin
from setpoint.machinery import errors
from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.schema import definitions

_NOT_AN_OBJECT = ("couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go "
                  'value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                  'Kind string "json:\\"kind,omitempty\\"" }')
# where k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go makes its Scheme
_META_SCHEME = "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:26"
_DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"



def _type_meta_error(obj: dict[str, Any]) -> str | None:
    """The json serializer reads apiVersion and kind first: either of the wrong type fails."""
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return (f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                    f"{unmarshal_kind(value)} into Go struct field .{key} of type string")
    return None


def decode_kind(obj: Any, api_version: str, kind: str) -> Any:
    """``obj`` as the typed decoder of ``kind`` leaves it (unknown fields dropped)."""
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
    decoded, _ = decode_builtin(obj, schema, kind)
    return decoded


def _delete_options_versions() -> set[str]:
    raw = definitions().raw.get(_DELETE_OPTIONS) or {}
    versions = {f"{g['group']}/{g['version']}" if g.get("group") else g["version"]
                for g in raw.get("x-kubernetes-group-version-kind") or ()}
    return versions | {"meta.k8s.io/v1", "meta.k8s.io/v1beta1"}


def decode_delete_options(obj: Any) -> dict[str, Any] | None:
    """A DELETE's body as DeleteOptions; anything else is a 400 in the decoder's words."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise errors.bad_request(_NOT_AN_OBJECT.replace("{}", unmarshal_kind(obj), 1))
    problem = _type_meta_error(obj)
    if problem is not None:
        raise errors.bad_request(problem)
    kind = obj.get("kind") or "DeleteOptions"
    api_version = obj.get("apiVersion") or "meta.k8s.io/v1"
    if kind != "DeleteOptions" or api_version not in _delete_options_versions():
        raise errors.bad_request(f'no kind "{kind}" is registered for version "{api_version}" '
                                 f'in scheme "{_META_SCHEME}"')
    try:
        decoded, _ = decode_builtin(obj, definitions().get(_DELETE_OPTIONS), "DeleteOptions")
    except errors.StatusError as err:
        raise errors.bad_request(err.message.split("cannot be handled as a DeleteOptions: ",
                                                   1)[-1]) from None
    return decoded
