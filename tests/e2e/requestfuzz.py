"""A seeded generator of malformed API requests, for volume rather than shrinking.

Every request aims at one endpoint the server's discovery lists (each resource and
subresource, namespaced or not) with one verb, query parameters the server reads (good and
bad values), and a body: an object of the endpoint's kind built from its OpenAPI schema, with
some fields replaced by values of the wrong shape (wrong JSON types, numbers beyond int32,
int64 and float64, lone surrogates, nulls, deep nesting, wrong kinds and apiVersions), or a
patch of each type carrying such values, or bytes that are not JSON at all.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from setpoint.machinery.schema import Schema, definitions

JSON = "application/json"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")

# values of every wrong shape: the generator puts them where any field's value goes
DEEP_LIST: Any = []
DEEP_DICT: Any = {}
for _ in range(60):  # deep, yet below the decoders' own nesting caps
    DEEP_LIST = [DEEP_LIST]
    DEEP_DICT = {"a": DEEP_DICT}
BAD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.5, -0.0, 2**31, -(2**31) - 1, 2**32, 2**53 + 1, 2**63,
    -(2**63) - 1, 2**64, 10**30, 1e308, -1e308, 1e-320, "", "x", "\ud800", "a\udfffb",
    "\x00\n\"", "ü" * 3, "1e308", "-1", "true", "null", [], [None], [1, "a"], {}, {"a": None},
    {"": 1}, {"\ud800": "x"}, DEEP_LIST, DEEP_DICT, "x" * 300,
]
QUERY_VALUES: list[str | bytes] = [
                "", "x", "0", "-1", "1", "true", "false", "All", "Strict", "Warn", "Ignore",
                "2147483648", "99999999999999999999", "1e308", "a=b", "a in (b)", "!a",
                "metadata.name=x", "metadata.name!=", "Foreground", "Orphan", "Background",
                "NotOlderThan", "Exact", "%", "Object", "Metadata", "None",
                b"\xed\xa0\x80", b"\xff"]  # a lone surrogate, and not UTF-8 at all
QUERY_PARAMS = ["fieldManager", "fieldValidation", "dryRun", "force", "labelSelector",
                "fieldSelector", "limit", "continue", "resourceVersion", "resourceVersionMatch",
                "watch", "allowWatchBookmarks", "sendInitialEvents", "timeoutSeconds",
                "gracePeriodSeconds", "propagationPolicy", "orphanDependents", "includeObject",
                "pretty"]
ACCEPTS = [None, None, JSON, "application/yaml",
           "application/json;as=Table;v=v1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
           "application/vnd.kubernetes.protobuf", "text/html", "*/*"]
KINDS = [("v1", "ConfigMap"), ("v1", "Pod"), ("apps/v1", "Deployment"), ("v1", "Status"),
         ("meta.k8s.io/v1", "DeleteOptions"), ("v1", "DeleteOptions"), ("apps/v9", "Scale"),
         ("autoscaling/v1", "Scale"), ("", ""), (5, None), ("v1", ["List"])]

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@dataclass
class Endpoint:
    """One resource of one group version, as discovery lists it."""

    base: str  # /api/v1 or /apis/<group>/<version>
    resource: str
    kind: str
    namespaced: bool
    verbs: list[str]
    subresources: dict[str, str] = field(default_factory=dict)  # subresource -> its kind

    @property
    def api_version(self) -> str:
        return self.base.removeprefix("/api/").removeprefix("/apis/")


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, Any]  # str, or bytes sent percent-encoded as they are
    body: bytes | None
    content_type: str
    accept: str | None


class RequestFuzzer:
    """Malformed requests from a seeded generator: the same seed, the same requests."""

    def __init__(self, seed: int, endpoints: list[Endpoint], namespace: str,
                 names: dict[str, list[str]],
                 custom_schemas: dict[str, dict[str, Any]] | None = None) -> None:
        self.rng = random.Random(seed)
        self.endpoints = endpoints
        self.namespace = namespace
        self.names = names  # resource -> names of objects the targets created
        self.custom_schemas = {k: Schema(v) for k, v in (custom_schemas or {}).items()}

    # -- values --------------------------------------------------------------------------
    def bad(self) -> Any:
        return self.rng.choice(BAD_VALUES)

    def value(self, schema: Schema | None, depth: int = 0) -> Any:
        """A value for ``schema``: mostly of its shape, sometimes of any wrong one."""
        rng = self.rng
        if schema is None or depth > 6 or rng.random() < 0.12:
            return self.bad()
        if schema.int_or_string:
            return rng.choice([1, "50%", "1Gi", 2**40, "x"])
        t = schema.type
        if t == "object":
            props = schema.properties
            if props:
                keys = rng.sample(sorted(props), min(len(props), rng.randint(0, 3)))
                out = {k: self.value(props[k], depth + 1) for k in keys}
                if rng.random() < 0.1:
                    out[rng.choice(["unknownField", "a.b", "$patch", "\ud800"])] = self.bad()
                return out
            el = schema.additional_properties
            return {rng.choice(["a", "b/c", "k8s.io/x", ""]): self.value(el, depth + 1)
                    for _ in range(rng.randint(0, 2))}
        if t == "array":
            return [self.value(schema.items, depth + 1) for _ in range(rng.randint(0, 2))]
        if t == "string":
            return rng.choice(["", "a", "web", "Always", "TCP", "1Gi", "2024-01-01T00:00:00Z",
                               "\ud800", "ü", "a" * 70])
        if t == "integer":
            return rng.choice([0, 1, 3, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**64, 1e308])
        if t == "number":
            return rng.choice([0, 0.5, 1e308, -1e308, 2**64])
        if t == "boolean":
            return rng.choice([True, False])
        return self.bad()

    def schema_for(self, ep: Endpoint, kind: str) -> Schema | None:
        if ep.resource in self.custom_schemas and kind == ep.kind:
            return self.custom_schemas[ep.resource]
        group, _, version = ep.api_version.rpartition("/")
        if kind != ep.kind:  # a subresource's own kind (Scale, Binding, Eviction...)
            for g, v in ((group, version), ("autoscaling", "v1"), ("policy", "v1"), ("", "v1"),
                         ("authentication.k8s.io", "v1")):
                found = definitions().for_kind(g, v, kind)
                if found is not None:
                    return found
            return None
        return definitions().for_kind(group, version, kind)

    def obj(self, ep: Endpoint, kind: str, name: str | None) -> Any:
        """An object of ``kind`` for ``ep``: right in its frame, wrong in some fields."""
        rng = self.rng
        if rng.random() < 0.05:
            return self.bad()
        out = self.value(self.schema_for(ep, kind))
        out = dict(out) if isinstance(out, dict) else {}  # never a shared BAD_VALUES dict
        api_version, sent_kind = (ep.api_version, kind) if rng.random() < 0.85 \
            else rng.choice(KINDS)
        out["apiVersion"], out["kind"] = api_version, sent_kind
        if ep.resource in self.custom_schemas and kind == ep.kind and rng.random() < 0.5:
            # a CRD's schema leaves metadata out, but the server reads it as an ObjectMeta:
            # one of its fields of a wrong type
            meta_schema = definitions().get(OBJECT_META)
            meta = self.value(meta_schema)
            meta = dict(meta) if isinstance(meta, dict) else {}  # never a shared BAD_VALUES dict
            meta[rng.choice(sorted(meta_schema.properties))] = self.bad()
            out["metadata"] = meta
            return out
        meta = out.get("metadata")
        if not isinstance(meta, dict) or rng.random() < 0.7:
            meta = dict(meta) if isinstance(meta, dict) else {}  # as above
            if name is not None and rng.random() < 0.9:
                meta["name"] = name
            out["metadata"] = meta
        return out

    def encode(self, value: Any) -> bytes:
        roll = self.rng.random()
        text = json.dumps(value)  # ensure_ascii: lone surrogates travel as \\ud800 escapes
        if roll < 0.04:
            return text.encode()[: max(1, len(text) // 2)]  # truncated
        if roll < 0.06:
            return b"\xff\xfe" + text.encode()
        return text.encode()

    # -- requests ------------------------------------------------------------------------
    def name(self, ep: Endpoint) -> str:
        known = self.names.get(ep.resource) or []
        if known and self.rng.random() < 0.75:
            return self.rng.choice(known)
        return self.rng.choice(["missing", "a", "UPPER", "a..b", "x" * 300, "%00", "%F0%9F"])

    def query(self) -> dict[str, Any]:
        rng = self.rng
        keys = rng.sample(QUERY_PARAMS, rng.choice([0, 0, 1, 1, 2, 3]))
        return {k: rng.choice(QUERY_VALUES) for k in keys}

    def json_patch(self, ep: Endpoint) -> Any:
        rng = self.rng
        if rng.random() < 0.1:
            return self.bad()
        paths = ["/spec/replicas", "/metadata/labels/a", "/metadata/name", "/metadata",
                 "/spec", "/status", "/data/a", "/spec/template/spec/containers/0/image",
                 "/metadata/annotations", "/kind", "/apiVersion", "/", "", "/a~2b", "/-"]
        return [{"op": rng.choice(["add", "replace", "remove", "test", "move", "copy", "x", 5]),
                 "path": rng.choice(paths), "value": self.bad(),
                 **({"from": rng.choice(paths)} if rng.random() < 0.3 else {})}
                for _ in range(rng.randint(1, 3))]

    def request(self) -> Request:
        rng = self.rng
        # custom resources go through a decoder of their own (schema-driven, untyped
        # metadata): sent to as often as ten built-in resources together
        ep = rng.choices(self.endpoints, weights=[
            10 if e.resource in self.custom_schemas else 1 for e in self.endpoints])[0]
        ns = self.namespace if ep.namespaced and rng.random() < 0.9 else None
        collection = ep.base + (f"/namespaces/{ns}" if ns else "") + f"/{ep.resource}"
        name = self.name(ep)
        sub = rng.choice(sorted(ep.subresources)) if ep.subresources and rng.random() < 0.3 \
            else ""
        item = f"{collection}/{quote(name, safe='%')}" + (f"/{sub}" if sub else "")
        kind = ep.subresources.get(sub, ep.kind) if sub else ep.kind
        verb = rng.choice(["get", "list", "watch", "create", "update", "patch", "patch",
                           "patch", "delete", "deletecollection", "odd"])
        query = self.query()
        accept = rng.choice(ACCEPTS)
        content_type = rng.choice([JSON] * 6 + ["application/yaml", "text/plain", "",
                                               "application/vnd.kubernetes.protobuf"])
        body: bytes | None = None
        if verb == "get":
            method, path = "GET", item
        elif verb == "list":
            method, path = "GET", collection
        elif verb == "watch":
            method, path = "GET", collection
            query["watch"] = rng.choice(["true", "1", "false"])
            query["timeoutSeconds"] = "1"
        elif verb == "create":
            method = "POST"
            path = item if sub else collection
            body = self.encode(self.obj(ep, kind, None if rng.random() < 0.3 else name))
        elif verb == "update":
            method, path = "PUT", item
            body = self.encode(self.obj(ep, kind, name))
        elif verb == "patch":
            method, path = "PATCH", item
            content_type = rng.choice((*PATCH_TYPES, "application/json", "text/plain"))
            if content_type == "application/json-patch+json":
                body = self.encode(self.json_patch(ep))
            else:
                body = self.encode(self.obj(ep, kind, name))
            if content_type == "application/apply-patch+yaml":
                query.setdefault("fieldManager", "fuzz")
        elif verb in ("delete", "deletecollection"):
            method = "DELETE"
            path = item if verb == "delete" else collection
            if rng.random() < 0.5:
                options = {"kind": "DeleteOptions", "apiVersion": "v1",
                           rng.choice(["gracePeriodSeconds", "propagationPolicy", "dryRun",
                                       "preconditions", "orphanDependents"]): self.bad()}
                if rng.random() < 0.3:
                    options["apiVersion"], options["kind"] = rng.choice(KINDS)
                body = self.encode(options)
        else:
            method = rng.choice(["HEAD", "OPTIONS", "PROPFIND", "TRACE"])
            path = rng.choice([item, collection])
        return Request(method, path, query, body, content_type, accept)
