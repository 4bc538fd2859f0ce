"""Content negotiation: which representation a request's Accept header asks for."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from setpoint.machinery import errors

SUPPORTED = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


@dataclass(frozen=True, slots=True)
class MediaType:
    type: str = "application/json"
    as_kind: str = ""  # Table, PartialObjectMetadata(List), APIGroupDiscoveryList
    group: str = ""
    version: str = ""
    include_object: str = ""

    @property
    def is_yaml(self) -> bool:
        return self.type == "application/yaml"

    @property
    def content_type(self) -> str:
        if self.as_kind:
            return f"{self.type};g={self.group};v={self.version};as={self.as_kind}"
        return self.type


JSON = MediaType()


def _parse_one(entry: str) -> tuple[str, dict[str, str]]:
    parts = [p.strip() for p in entry.split(";")]
    params = {}
    for p in parts[1:]:
        if "=" in p:
            k, v = p.split("=", 1)
            params[k.strip()] = v.strip()
    return parts[0].lower(), params


def negotiate(accept: str | None, *, discovery: bool = False) -> MediaType:
    """Pick the first acceptable representation, or raise 406."""
    if not accept:
        return JSON
    if len(accept) <= _REMEMBERED_ACCEPT_LENGTH:
        return _remembered(accept, discovery)  # clients send the same few on every request
    return _negotiate(accept, discovery)


_REMEMBERED_ACCEPT_LENGTH = 256


@functools.lru_cache(maxsize=256)
def _remembered(accept: str, discovery: bool) -> MediaType:
    return _negotiate(accept, discovery)  # (MediaType is frozen: one answer can be shared)


def _negotiate(accept: str, discovery: bool) -> MediaType:
    wanted_aggregated = False
    for entry in accept.split(","):
        mtype, params = _parse_one(entry)
        if mtype in ("*/*", "application/*"):
            return JSON
        if mtype not in ("application/json", "application/yaml"):
            continue
        as_kind = params.get("as", "")
        if not as_kind:
            return MediaType(mtype)
        g, v = params.get("g", ""), params.get("v", "")
        if as_kind == "APIGroupDiscoveryList":
            wanted_aggregated = True
            if discovery and g == "apidiscovery.k8s.io" and v in ("v2", "v2beta1"):
                return MediaType(mtype, as_kind, g, v)
            continue
        if g == "meta.k8s.io" and v in ("v1", "v1beta1") and as_kind in (
                "Table", "PartialObjectMetadata", "PartialObjectMetadataList"):
            return MediaType(mtype, as_kind, g, v, params.get("includeObject", ""))
    if discovery and not wanted_aggregated:
        return JSON
    raise errors.not_acceptable(f"only the following media types are accepted: {SUPPORTED}")
