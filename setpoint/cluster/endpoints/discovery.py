"""Discovery: /version, /api, /apis and the aggregated (apidiscovery.k8s.io) documents.

Every function here is pure: it reads the ``Registry`` and returns the JSON-ready dict the
real kube-apiserver v1.32 serves for that path, in the same order (built-in groups in the
apiserver's priority order, then the groups of custom resources). The HTTP layer picks the
function by path and Accept header and serializes the result.
"""

from __future__ import annotations

import base64
import hashlib

import orjson

from setpoint.cluster.registry import Registry, ResourceType
from setpoint.cluster.registry.builtin import STORAGE_VERSIONS
from setpoint.cluster.registry.served import served_groups, subresource_meta
from setpoint.machinery import gojson
from setpoint.machinery.objects import Obj

# The verbs a custom resource serves, in the order apiextensions-apiserver lists them.
CUSTOM_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update",
                "watch")
GIT_VERSION = "v1.32.0"


def version_info() -> Obj:
    """The /version document of a v1.32 server."""
    import platform
    import sys

    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {
        "major": "1", "minor": "32", "gitVersion": GIT_VERSION,
        "gitCommit": "setpoint", "gitTreeState": "clean", "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "compiler": "gc", "platform": f"{sys.platform}/{machine}",
    }


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """The apiserver's opaque storage-version hash: base64(sha256("g/v/Kind"))[:8]."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _resources(registry: Registry, group: str, version: str) -> list[ResourceType] | None:
    return served_groups(registry).get(group, {}).get(version)


# -- legacy discovery ---------------------------------------------------------------------

def api_versions(server_address: str = "127.0.0.1:6443") -> Obj:
    """/api: the APIVersions of the core group."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": server_address}]}


def _storage_gv(rt: ResourceType) -> tuple[str, str]:
    if rt.is_custom:
        for v in (rt.crd or {}).get("spec", {}).get("versions", ()):
            if v.get("storage"):
                return rt.group, v["name"]
        return rt.group, rt.version
    return STORAGE_VERSIONS.get((rt.group, rt.resource), (rt.group, rt.version))


def _verbs(rt: ResourceType) -> list[str]:
    if rt.is_custom:
        return [v for v in CUSTOM_VERBS if v in rt.verbs]
    return sorted(rt.verbs)


def _subresource_order(rt: ResourceType) -> list[str]:
    # apiextensions lists status before scale; the built-in installer sorts by path
    if rt.is_custom:
        return [s for s in ("status", "scale") if s in rt.subresources]
    return sorted(rt.subresources)


def _api_resource(rt: ResourceType) -> Obj:
    entry: Obj = {"name": rt.resource, "singularName": rt.singular, "namespaced": rt.namespaced,
                  "kind": rt.kind, "verbs": _verbs(rt)}
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    # only resources kept in storage carry a hash (not bindings, reviews, componentstatuses)
    if "watch" in rt.verbs:
        entry["storageVersionHash"] = storage_version_hash(*_storage_gv(rt), rt.kind)
    return entry


def _api_subresources(rt: ResourceType) -> list[Obj]:
    out = []
    for sub in _subresource_order(rt):
        group, version, kind, verbs = subresource_meta(rt, sub)
        entry: Obj = {"name": f"{rt.resource}/{sub}", "singularName": "",
                      "namespaced": rt.namespaced}
        if (group, version) != (rt.group, rt.version):
            entry["group"], entry["version"] = group, version
        entry["kind"] = kind
        entry["verbs"] = list(verbs)
        out.append(entry)
    return out


def api_resource_list(registry: Registry, group: str, version: str) -> Obj | None:
    """/api/v1 or /apis/<group>/<version>: the APIResourceList, or None when not served."""
    rts = _resources(registry, group, version)
    if rts is None:
        return None
    resources: list[Obj] = []
    for rt in rts:
        resources.append(_api_resource(rt))
        resources.extend(_api_subresources(rt))
    if group == "":
        # the core list is written without apiVersion by the real server
        return {"kind": "APIResourceList", "groupVersion": version, "resources": resources}
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
            "resources": resources}


def core_resource_list(registry: Registry) -> Obj:
    """/api/v1: the core group's APIResourceList."""
    return api_resource_list(registry, "", "v1") or {
        "kind": "APIResourceList", "groupVersion": "v1", "resources": []}


def _group_entry(group: str, versions: list[str]) -> Obj:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(registry: Registry) -> Obj:
    """/apis: every named group with its versions, preferred first."""
    groups = [_group_entry(g, list(vs)) for g, vs in served_groups(registry).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> Obj | None:
    """/apis/<group>: the APIGroup, or None when the group is not served."""
    versions = served_groups(registry).get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, list(versions))}


# -- aggregated discovery -----------------------------------------------------------------

AGGREGATED_VERSIONS = ("v2", "v2beta1")


def _response_kind(rt: ResourceType, group: str, version: str, kind: str) -> Obj:
    # built-ins leave group/version empty when they are the list's own; CRDs always fill them
    if not rt.is_custom and (group, version) == (rt.group, rt.version):
        return {"group": "", "version": "", "kind": kind}
    return {"group": group, "version": version, "kind": kind}


def _discovery_resource(rt: ResourceType) -> Obj:
    entry: Obj = {
        "resource": rt.resource,
        "responseKind": _response_kind(rt, rt.group, rt.version, rt.kind),
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": _verbs(rt),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs = []
    for sub in _subresource_order(rt):
        group, version, kind, verbs = subresource_meta(rt, sub)
        subs.append({"subresource": sub,
                     "responseKind": _response_kind(rt, group, version, kind),
                     "verbs": list(verbs)})
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated_discovery(registry: Registry, legacy: bool, version: str = "v2") -> Obj:
    """The APIGroupDiscoveryList for /api (``legacy``) or /apis, in apidiscovery ``version``.

    v2 and v2beta1 carry the same fields; only the apiVersion differs.
    """
    if version not in AGGREGATED_VERSIONS:
        raise ValueError(f"unsupported apidiscovery version {version!r}")
    items = []
    for group, versions in served_groups(registry).items():
        if legacy != (group == ""):
            continue
        metadata: Obj = {"creationTimestamp": None} if legacy else {
            "name": group, "creationTimestamp": None}
        items.append({"metadata": metadata, "versions": [
            {"version": v, "resources": [_discovery_resource(rt) for rt in rts],
             "freshness": "Current"}
            for v, rts in versions.items()]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {}, "items": items}


def aggregated_content_type(version: str = "v2") -> str:
    """The Content-Type of an aggregated discovery answer in ``version``."""
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def negotiate_aggregated(accept: str | None) -> str | None:
    """The apidiscovery version an Accept header asks for first, or None for legacy JSON.

    Media ranges are taken in order (kubectl lists v2, then v2beta1, then plain JSON); an
    APIGroupDiscoveryList range of an unknown version is skipped. When every range asks for
    an unknown version and none is plain, the caller answers 406 (see ``accepts_legacy``).
    """
    for media in _media_ranges(accept):
        params = media[1]
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == \
                "APIGroupDiscoveryList" and params.get("v") in AGGREGATED_VERSIONS:
            return params["v"]
        if _plain(media):
            return None
    return None


def accepts_legacy(accept: str | None) -> bool:
    """Whether ``accept`` allows the plain APIGroupList/APIVersions answer."""
    ranges = _media_ranges(accept)
    return not ranges or any(_plain(m) for m in ranges)


def _plain(media: tuple[str, dict[str, str]]) -> bool:
    mtype, params = media
    return mtype in ("application/json", "application/*", "*/*", "application/yaml") and \
        "as" not in params


def _media_ranges(accept: str | None) -> list[tuple[str, dict[str, str]]]:
    out = []
    for part in (accept or "").split(","):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params = {}
        for p in pieces[1:]:
            k, _, v = p.partition("=")
            params[k.strip()] = v.strip()
        out.append((pieces[0].lower(), params))
    return out


def discovery_etag(document: Obj) -> str:
    """A strong ETag for an aggregated discovery document (kubectl caches by it)."""
    # the apiserver quotes the upper-case hex of a SHA-512 over the serialized document
    digest = hashlib.sha512(gojson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f'"{digest.upper()}"'
