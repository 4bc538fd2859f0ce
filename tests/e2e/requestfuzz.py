"""A seeded generator of malformed API requests, for volume rather than shrinking.

Every request aims at one endpoint the server's discovery lists (each resource and
subresource, namespaced or not) with one verb, query parameters the server reads (good and
bad values), and a body: an object of the endpoint's kind built from its OpenAPI schema, with
some fields replaced by values of the wrong shape (wrong JSON types, numbers beyond int32,
int64 and float64, lone surrogates, nulls, deep nesting, wrong kinds and apiVersions), or a
patch of each type carrying such values, or bytes that are not JSON at all.

Bad values alone stop most requests at the decoder, so a share of the bodies is well formed:
objects whose values have their schema's shape (with unknown fields, for fieldValidation to
act on), objects of another kind the server serves, DeleteOptions-like bodies whose only
fault is their kind or apiVersion, and raw texts JSON encoders never write (duplicate keys,
numbers beyond float64, nesting beyond the decoders' caps). Query parameters get values of
their own kind (``fieldValidation=Warn``, ``propagationPolicy=Orphan``) as often as garbage.
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
# each parameter the server reads, with values of its own kind (good and nearly good)
PARAM_VALUES: dict[str, list[str]] = {
    "dryRun": ["All", "All", "", "x", "all"],
    "fieldManager": ["fuzz", "kubectl", "", "x" * 200, "a\nb"],
    "fieldValidation": ["Strict", "Warn", "Ignore", "", "garbage", "warn"],
    "force": ["true", "false", "", "x"],
    "resourceVersion": ["0", "1", "", "abc", "-1", "99999999", "18446744073709551616"],
    "resourceVersionMatch": ["NotOlderThan", "Exact", "", "x"],
    "limit": ["0", "1", "2", "-1", "500", "x", "99999999999999999999"],
    "continue": ["", "x", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0",
                 "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiIn0"],
    "labelSelector": ["app=web", "app in (a,b)", "!app", "app!=x", "a==b", "(", "a=b,c"],
    "fieldSelector": ["metadata.name=cm1", "metadata.namespace!=x", "spec.nodeName=",
                      "status.phase=Running", "involvedObject.name=x", "type=Normal",
                      "regarding.name=x", "bogus=x", "a==b", "metadata.name"],
    "propagationPolicy": ["Foreground", "Background", "Orphan", "", "x"],
    "gracePeriodSeconds": ["0", "1", "-1", "30", "x", "9223372036854775808"],
    "orphanDependents": ["true", "false", "x"],
    "watch": ["true", "false", "1", "0"],
    "allowWatchBookmarks": ["true", "false", "x"],
    "sendInitialEvents": ["true", "false", "x"],
    "timeoutSeconds": ["1", "0", "-1", "x"],
    "includeObject": ["Object", "Metadata", "None", "x"],
    "pretty": ["true", "false", "1", "x"],
}
QUERY_PARAMS = sorted(PARAM_VALUES)
ACCEPTS = [None, None, JSON, "application/yaml",
           "application/json;as=Table;v=v1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
           "application/vnd.kubernetes.protobuf", "text/html", "*/*"]
KINDS: list[tuple[Any, Any]] = [
    ("v1", "ConfigMap"), ("v1", "Pod"), ("apps/v1", "Deployment"), ("v1", "Status"),
    ("meta.k8s.io/v1", "DeleteOptions"), ("v1", "DeleteOptions"), ("apps/v9", "Scale"),
    ("autoscaling/v1", "Scale"), ("", ""), (5, None), ("v1", ["List"])]
# DeleteOptions-like bodies: the right kind at versions it is not registered at, and the
# option kinds next to it (meta/internalversion's scheme knows these)
DELETE_KINDS: list[tuple[Any, Any]] = [
    ("apps/v1", "DeleteOptions"), ("v2", "DeleteOptions"), ("meta.k8s.io/v2", "DeleteOptions"),
    ("meta.k8s.io/v1beta1", "DeleteOptions"), ("policy/v1", "DeleteOptions"),
    ("meta.k8s.io/v1", "ListOptions"), ("meta.k8s.io/v1", "GetOptions"),
    ("meta.k8s.io/v1", "PatchOptions"), ("meta.k8s.io/v1", "Status"), ("v1", "Status"),
    ("meta.k8s.io/v1", "WatchEvent"), ("v1", "List"), ("policy/v1", "Eviction"),
    ("__internal", "DeleteOptions"), ("", "DeleteOptions"), ("v1", ""), ("x/y/z", "A"),
    (None, "DeleteOptions"), ("v1", None), ("v1", 5), ([], "DeleteOptions")]
DELETE_OPTION_VALUES: dict[str, list[Any]] = {
    "gracePeriodSeconds": [0, 1, 30, None, -1],
    "propagationPolicy": ["Foreground", "Background", "Orphan", None, "x"],
    "dryRun": [["All"], [], None, ["x"]],
    "preconditions": [{"uid": "x"}, {"resourceVersion": "1"}, {}, None,
                      {"uid": None, "resourceVersion": ""}],
    "orphanDependents": [True, False, None],
}
# texts no JSON encoder writes: duplicate keys, numbers beyond float64 and int64, nesting
# beyond the decoders' caps, escapes of lone surrogates
RAW_BODIES: list[bytes] = [
    b'{"kind":"ConfigMap","kind":"Pod","apiVersion":"v1","metadata":{"name":"dup"}}',
    b'{"metadata":{"name":"a","name":"b"},"metadata":{"name":"c"}}',
    b'{"metadata":{"name":"big","generation":1e400}}',
    b'{"metadata":{"name":"big","generation":123456789012345678901234567890}}',
    b'{"spec":{"replicas":1e400}}', b'{"spec":{"replicas":-0}}',
    b'{"spec":{"replicas":1.0000000000000000000001}}',
    b'{"metadata":{"name":"\\ud800"},"data":{"\\udfff":"\\ud800\\udc00"}}',
    b'{"metadata":{"name":"s","labels":{"a":"\\ud800"}}}',
    b"[" * 10_050 + b"]" * 10_050,
    b'{"metadata":{"name":"deep"},"spec":' + b'{"a":' * 10_050 + b"1" + b"}" * 10_050 + b"}",
    b"metadata: {name: y, name: z}\n", b"&a [*a]", b"- &a\n- *a\n" * 50,
    b"{}", b"null", b"[]", b"\"x\"", b"1",
]

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
        self.wrong = 0.12  # how often a value takes a wrong shape; 0 while building clean ones

    # -- values --------------------------------------------------------------------------
    def bad(self) -> Any:
        return self.rng.choice(BAD_VALUES)

    def value(self, schema: Schema | None, depth: int = 0) -> Any:
        """A value for ``schema``: mostly of its shape, sometimes of any wrong one."""
        rng = self.rng
        if schema is None or depth > 6 or rng.random() < self.wrong:
            return self.bad() if self.wrong else None
        if schema.int_or_string:
            return rng.choice([1, "50%", "1Gi", 2**40, "x"])
        t = schema.type
        if t == "object":
            props = schema.properties
            if props:
                keys = rng.sample(sorted(props), min(len(props), rng.randint(0, 3)))
                out = {k: self.value(props[k], depth + 1) for k in keys}
                if rng.random() < 0.1:
                    out[rng.choice(["unknownField", "a.b", "$patch", "\ud800"])] = \
                        self.bad() if self.wrong else "x"
                return out
            el = schema.additional_properties
            return {rng.choice(["a", "b/c", "k8s.io/x", ""]): self.value(el, depth + 1)
                    for _ in range(rng.randint(0, 2))}
        if t == "array":
            return [self.value(schema.items, depth + 1) for _ in range(rng.randint(0, 2))]
        if t == "string":
            return rng.choice(["", "a", "web", "Always", "TCP", "1Gi", "2024-01-01T00:00:00Z",
                               "ü", "a" * 70, *(["\ud800"] if self.wrong else [])])
        if t == "integer":
            return rng.choice([0, 1, 3, -1, 2**31 - 1, *([2**31, 2**63 - 1, 2**63, 2**64, 1e308]
                                                         if self.wrong else [])])
        if t == "number":
            return rng.choice([0, 0.5, *([1e308, -1e308, 2**64] if self.wrong else [])])
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

    def clean_obj(self, ep: Endpoint, kind: str, name: str | None,
                  unknown: float = 0.5) -> dict[str, Any]:
        """An object of ``kind`` whose values all have their schema's shape, so that it
        passes the decoder, with an unknown field at the top, in metadata or one level
        deeper at the rate ``unknown`` (what fieldValidation Strict/Warn/Ignore acts on)."""
        rng = self.rng
        self.wrong = 0.0
        try:
            out = self.value(self.schema_for(ep, kind))
        finally:
            self.wrong = 0.12
        out = {k: v for k, v in out.items() if v is not None} if isinstance(out, dict) else {}
        meta = out.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        out["metadata"] = {**meta, **({"name": name} if name is not None else {})}
        out["apiVersion"], out["kind"] = ep.api_version, kind
        if rng.random() < unknown:
            holder = rng.choice([out, out["metadata"],
                                 *(v for v in out.values() if isinstance(v, dict))])
            holder[rng.choice(["unknownField", "bogus", "a.b", "Name", "spec"])] = \
                rng.choice([1, "x", {"a": 1}, [1], None])
        return out

    def other_kind(self, name: str | None) -> Any:
        """A clean object of any kind the server serves, sent to another endpoint."""
        other = self.rng.choice(self.endpoints)
        return self.clean_obj(other, other.kind, name)

    def delete_options(self, ep: Endpoint) -> Any:
        """A DELETE body: DeleteOptions with values of the right type, or of the wrong one,
        under the right kind and apiVersion or, as often, a wrong pair that is all that is
        wrong with it (the kind of any served resource, an options kind, another version)."""
        rng = self.rng
        options: dict[str, Any] = {}
        api_version: str | None
        kind: str | None
        for key in rng.sample(sorted(DELETE_OPTION_VALUES), rng.randint(0, 2)):
            options[key] = rng.choice(DELETE_OPTION_VALUES[key]) if rng.random() < 0.8 \
                else self.bad()
        roll = rng.random()
        if roll < 0.4:
            api_version, kind = rng.choice([("v1", "DeleteOptions"),
                                            ("meta.k8s.io/v1", "DeleteOptions")])
        elif roll < 0.6:
            api_version, kind = rng.choice(DELETE_KINDS)
        elif roll < 0.75:
            api_version, kind = ep.api_version, ep.kind
        elif roll < 0.9:
            other = rng.choice(self.endpoints)
            api_version, kind = other.api_version, other.kind
        else:
            api_version, kind = rng.choice(KINDS)
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if value is not None or rng.random() < 0.5:
                options[key] = value
        return options

    def encode(self, value: Any) -> bytes:
        roll = self.rng.random()
        text = json.dumps(value)  # ensure_ascii: lone surrogates travel as \\ud800 escapes
        if roll < 0.04:
            return text.encode()[: max(1, len(text) // 2)]  # truncated
        if roll < 0.06:
            return b"\xff\xfe" + text.encode()
        if roll < 0.09 and isinstance(value, dict) and value:
            # a duplicate of one of the object's own keys, first (the later one wins in Go)
            dup = self.rng.choice(sorted(value))
            return ("{" + json.dumps(dup) + ": " + json.dumps(self.bad()) + ", "
                    + text[1:]).encode()
        return text.encode()

    def body(self, ep: Endpoint, kind: str, name: str | None) -> bytes:
        """A POST, PUT or patch body of every sort: schema-shaped with wrong values, clean
        (often with unknown fields), of another served kind, DeleteOptions-like, raw."""
        roll = self.rng.random()
        if roll < 0.45:
            return self.encode(self.obj(ep, kind, name))
        if roll < 0.75:
            return self.encode(self.clean_obj(ep, kind, name))
        if roll < 0.87:
            return self.encode(self.other_kind(name))
        if roll < 0.93:
            return self.encode(self.delete_options(ep))
        return self.rng.choice(RAW_BODIES)

    # -- requests ------------------------------------------------------------------------
    def name(self, ep: Endpoint) -> str:
        known = self.names.get(ep.resource) or []
        if known and self.rng.random() < 0.6:
            return self.rng.choice(known)
        return self.rng.choice(["missing", "missing", "new-one", "a", "UPPER", "a..b",
                                "x" * 300, "%00", "%F0%9F"])

    def query(self) -> dict[str, Any]:
        rng = self.rng
        keys = rng.sample(QUERY_PARAMS, rng.choice([0, 0, 1, 1, 2, 3, 4]))
        return {k: rng.choice(PARAM_VALUES[k]) if rng.random() < 0.7
                else rng.choice(QUERY_VALUES) for k in keys}

    def json_patch(self, ep: Endpoint) -> Any:
        rng = self.rng
        if rng.random() < 0.1:
            return self.bad()
        paths = ["/spec/replicas", "/metadata/labels/a", "/metadata/name", "/metadata",
                 "/spec", "/status", "/data/a", "/spec/template/spec/containers/0/image",
                 "/metadata/annotations", "/kind", "/apiVersion", "/", "", "/a~2b", "/-",
                 "/metadata/unknownField", "/spec/unknownField"]
        good = rng.random() < 0.4  # values of a plausible shape reach validation
        return [{"op": rng.choice(["add", "replace", "remove", "test", "move", "copy", "x", 5]),
                 "path": rng.choice(paths),
                 "value": rng.choice([1, "x", {"a": "b"}, [], None]) if good else self.bad(),
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
        verb = rng.choice(["get", "list", "watch", "create", "create", "update", "update",
                           "patch", "patch", "patch", "patch", "delete", "delete",
                           "deletecollection", "odd"])
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
            body = self.body(ep, kind, None if rng.random() < 0.3 else name)
        elif verb == "update":
            method, path = "PUT", item
            body = self.body(ep, kind, name)
        elif verb == "patch":
            method, path = "PATCH", item
            content_type = rng.choice((*PATCH_TYPES, *PATCH_TYPES, "application/json",
                                       "text/plain"))
            if content_type == "application/json-patch+json":
                body = self.encode(self.json_patch(ep))
            elif content_type == "application/apply-patch+yaml" and rng.random() < 0.5:
                body = self.encode(self.clean_obj(ep, kind, name, unknown=1.0))
            else:
                body = self.body(ep, kind, name)
            if content_type == "application/apply-patch+yaml":
                # server-side apply: a field manager as a rule, and each fieldValidation
                if rng.random() < 0.9:
                    query["fieldManager"] = "fuzz"
                if rng.random() < 0.75:
                    query["fieldValidation"] = rng.choice(PARAM_VALUES["fieldValidation"])
        elif verb in ("delete", "deletecollection"):
            method = "DELETE"
            path = item if verb == "delete" else collection
            if rng.random() < 0.6:
                body = self.encode(self.delete_options(ep))
        else:
            method = rng.choice(["HEAD", "OPTIONS", "PROPFIND", "TRACE"])
            path = rng.choice([item, collection])
        return Request(method, path, query, body, content_type, accept)
