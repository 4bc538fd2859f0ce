"""/openapi/v3: the index of documents and one OpenAPI 3.0 document per group-version.

The index lists ``api``, ``api/v1``, ``apis``, ``apis/<group>``, ``apis/<group>/<version>``
and the few non-resource documents of a real server, each with a ``?hash=`` that changes
whenever the document does (clients cache documents by that URL). ``OpenAPIService`` builds
and serializes each document once and rebuilds only the group-versions whose resource types
changed since (built-in documents are big and never change).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from typing import Any, cast

import orjson

from setpoint.cluster.openapi.schemas import (
    META,
    builtin_name,
    closure,
    crd_schemas,
    custom_schema_name,
    ref,
)
from setpoint.cluster.openapi.v3_paths import (
    DELETE_OPTIONS,
    PATCH,
    SCALE,
    STATUS,
    WATCH_EVENT,
    OperationNames,
    camel_group,
    resource_paths,
)
from setpoint.cluster.registry import Registry, ResourceType
from setpoint.cluster.registry.served import served_groups, subresource_meta
from setpoint.machinery import gojson
from setpoint.machinery.objects import Obj

INFO = {"title": "Kubernetes", "version": "1.32.0"}
CRD_INFO = {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
SECURITY = {"securitySchemes": {"BearerToken": {
    "type": "apiKey", "description": "Bearer Token authentication", "name": "authorization",
    "in": "header"}}}
# documents every real server lists besides the API groups
_STATIC = (".well-known/openid-configuration", "openid/v1/jwks", "version")
# subresources served with a schema (connect-style ones like exec, log and proxy are not)
_SCHEMA_SUBRESOURCES = {"status", "scale", "finalize", "approval", "ephemeralcontainers",
                        "resize", "binding", "eviction", "token"}


def openapi_index_paths(registry: Registry) -> list[str]:
    """The document paths the index lists, sorted as the real server sorts them."""
    out = ["api", "apis", *_STATIC]
    for group, versions in served_groups(registry).items():
        if not group:
            out.extend(f"api/{v}" for v in versions)
            continue
        out.append(f"apis/{group}")
        out.extend(f"apis/{group}/{v}" for v in versions)
    return sorted(out)


def openapi_document(registry: Registry, path: str) -> Obj | None:
    """The document served at /openapi/v3/<path>, or None when the path is not served."""
    path = path.strip("/")
    groups = served_groups(registry)
    if path in ("api", "apis", *_STATIC):
        return _static_document(path)
    parts = path.split("/")
    if parts[0] == "api" and len(parts) == 2 and parts[1] in groups.get("", {}):
        return group_version_document("", parts[1], groups[""][parts[1]])
    if parts[0] == "apis" and len(parts) == 2 and parts[1] in groups and parts[1]:
        return _group_document(parts[1])
    if parts[0] == "apis" and len(parts) == 3 and parts[2] in groups.get(parts[1] or "-", {}):
        return group_version_document(parts[1], parts[2], groups[parts[1]][parts[2]])
    return None


def openapi_index(registry: Registry) -> Obj:
    """The /openapi/v3 index, with each document's hash (builds every document)."""
    # the index is JSON this module built, read back
    return cast(Obj, orjson.loads(OpenAPIService(registry).index()))


# -- group-version documents --------------------------------------------------------------

def group_version_document(group: str, version: str, rts: list[ResourceType]) -> Obj:
    """The document of one group-version serving ``rts``."""
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Obj] = {}
    extra: dict[str, Obj] = {}
    roots = {STATUS, DELETE_OPTIONS, PATCH, WATCH_EVENT, META + "APIResourceList"}
    custom = bool(rts) and all(rt.is_custom for rt in rts)
    list_ref: str | None
    for rt in rts:
        if rt.is_custom and rt.crd is not None:
            schemas = crd_schemas(rt.crd, rt.version)
            extra.update(schemas)
            object_ref, list_ref = list(schemas)
        else:
            name = builtin_name(rt.group, rt.version, rt.kind)
            if name is None:
                continue
            object_ref = name
            list_ref = builtin_name(rt.group, rt.version, rt.list_kind)
            roots.add(name)
            if list_ref:
                roots.add(list_ref)
        subs = []
        for sub in rt.subresources:
            if sub not in _SCHEMA_SUBRESOURCES:
                continue
            s_group, s_version, s_kind, verbs = subresource_meta(rt, sub)
            s_ref = SCALE if sub == "scale" else (
                object_ref if s_kind == rt.kind else builtin_name(s_group, s_version, s_kind))
            if s_ref is None:
                continue
            if s_ref != object_ref:
                roots.add(s_ref)
            subs.append((sub, s_ref, {"group": s_group, "version": s_version, "kind": s_kind},
                         verbs))
        paths.update(resource_paths(
            prefix=prefix, resource=rt.resource, kind=rt.kind, namespaced=rt.namespaced,
            group=rt.group, version=rt.version, verbs=rt.verbs, object_ref=object_ref,
            list_ref=list_ref, custom=rt.is_custom, subresources=subs))
    names = OperationNames(group, version, "", False)
    paths[f"{prefix}/"] = {"get": {
        "tags": [names.tag], "description": "get available resources",
        "operationId": f"get{names.gv}APIResources",
        "responses": {"200": {"description": "OK", "content": {
            t: {"schema": ref(META + "APIResourceList")}
            for t in ("application/json", "application/vnd.kubernetes.protobuf",
                      "application/yaml")}}}}}
    return {
        "openapi": "3.0.0",
        "info": dict(CRD_INFO if custom else INFO),
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": closure(roots, extra), **SECURITY},
    }


def _static_document(path: str) -> Obj:
    if path == "api":
        route, op_id, schema, tag = "/api/", "getCoreAPIVersions", "APIVersions", "core"
    elif path == "apis":
        route, op_id, schema, tag = "/apis/", "getAPIVersions", "APIGroupList", "apis"
    elif path == "version":
        route, op_id, tag = "/version/", "getCodeVersion", "version"
        schema = "io.k8s.apimachinery.pkg.version.Info"
    elif path == "openid/v1/jwks":
        return _text_document("/openid/v1/jwks/", "getServiceAccountIssuerOpenIDKeyset",
                              "application/jwk-set+json", "get service account issuer "
                              "OpenID JSON Web Key Set (contains public token verification "
                              "keys)")
    else:
        return _text_document("/.well-known/openid-configuration/",
                              "getServiceAccountIssuerOpenIDConfiguration", "application/json",
                              "get service account issuer OpenID configuration, also known as "
                              "the 'OIDC discovery doc'")
    name = schema if "." in schema else META + schema
    return _single_get(route, op_id, tag, name, "get available API versions"
                       if path != "version" else "get the code version")


def _group_document(group: str) -> Obj:
    tag = camel_group(group, lower_first=True)
    return _single_get(f"/apis/{group}/", f"get{camel_group(group)}APIGroup", tag,
                       META + "APIGroup", "get information of a group")


def _single_get(route: str, op_id: str, tag: str, schema: str, description: str) -> Obj:
    content = {t: {"schema": ref(schema)} for t in
               ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml")}
    if schema.startswith("io.k8s.apimachinery.pkg.version"):
        content = {"application/json": {"schema": ref(schema)}}
    return {"openapi": "3.0.0", "info": dict(INFO), "paths": {route: {"get": {
        "tags": [tag], "description": description, "operationId": op_id,
        "responses": {"200": {"description": "OK", "content": content}}}}},
        "components": {"schemas": closure([schema]), **SECURITY}}


def _text_document(route: str, op_id: str, media: str, description: str) -> Obj:
    return {"openapi": "3.0.0", "info": dict(INFO), "paths": {route: {"get": {
        "tags": ["WellKnown" if route.startswith("/.well-known") else "openid"],
        "description": description, "operationId": op_id,
        "responses": {"200": {"description": "OK", "content": {
            media: {"schema": {"type": "string"}}}}}}}},
        "components": {"securitySchemes": SECURITY["securitySchemes"]}}


# -- the cached service -------------------------------------------------------------------

class _Entry:
    __slots__ = ("body", "hash", "key", "last_modified")

    def __init__(self, key: tuple[Any, ...], body: bytes) -> None:
        self.key = key
        self.body = body
        # the apiserver's document hash: upper-case hex SHA-512 of the served bytes
        self.hash = hashlib.sha512(body).hexdigest().upper()
        # OpenAPIV3Group.UpdateSpec's lastModified, to the second as HTTP dates carry it
        self.last_modified = int(time.time())


class OpenAPIService:
    """Serialized /openapi/v3 documents, rebuilt when the registry's types change.

    A document is keyed by the resource types it describes (compared by identity), so a new
    CRD rebuilds only its own group's documents and the index.
    """

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._docs: dict[str, _Entry] = {}
        self._index: tuple[int, bytes] | None = None
        self._lock = threading.Lock()

    def document(self, path: str) -> bytes | None:
        """The bytes of /openapi/v3/<path>, or None when the path is not served."""
        entry = self._entry(path.strip("/"))
        return entry.body if entry else None

    def hash(self, path: str) -> str | None:
        """The hash (and ETag value) of a document, as the index's ``?hash=`` shows it."""
        entry = self._entry(path.strip("/"))
        return entry.hash if entry else None

    def etag(self, path: str) -> str | None:
        h = self.hash(path)
        return f'"{h}"' if h else None

    def last_modified(self, path: str) -> int | None:
        """When the document was last built (seconds since the epoch), or None."""
        entry = self._entry(path.strip("/"))
        return entry.last_modified if entry else None

    def index(self) -> bytes:
        """The /openapi/v3 index document."""
        generation = self._registry.generation
        cached = self._index
        if cached is not None and cached[0] == generation:
            return cached[1]
        paths: Obj = {}
        for path in openapi_index_paths(self._registry):
            entry = self._entry(path)
            if entry is not None:
                paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={entry.hash}"}
        body = gojson.dumps({"paths": paths})
        self._index = (generation, body)
        return body

    def _entry(self, path: str) -> _Entry | None:
        key = self._key(path)
        if key is None:
            return None
        with self._lock:
            entry = self._docs.get(path)
            if entry is not None and entry.key == key:
                return entry
        doc = openapi_document(self._registry, path)
        if doc is None:
            return None
        entry = _Entry(key, gojson.dumps(doc))
        with self._lock:
            self._docs[path] = entry
        return entry

    def _key(self, path: str) -> tuple[Any, ...] | None:
        parts = path.split("/")
        groups = served_groups(self._registry)
        if parts[0] in ("api", "apis") and len(parts) == 2 + (parts[0] == "apis"):
            group = parts[1] if parts[0] == "apis" else ""
            rts = groups.get(group, {}).get(parts[-1])
            return None if rts is None else tuple(rts)
        if path in ("api", "apis", *_STATIC) or (
                parts[0] == "apis" and len(parts) == 2 and parts[1] in groups):
            return (path,)
        return None


def document_schema(document: Mapping[str, Any], group: str, version: str,
                    kind: str) -> Obj | None:
    """The component schema of ``kind`` in a document (what ``kubectl explain`` looks up)."""
    schema: Obj
    for schema in document.get("components", {}).get("schemas", {}).values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (
                    group, version, kind):
                return schema
    return None


__all__ = ["OpenAPIService", "custom_schema_name", "document_schema", "group_version_document",
           "openapi_document", "openapi_index", "openapi_index_paths"]
