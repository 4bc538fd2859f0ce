"""Random and malformed requests never make the server answer 500 or corrupt its store.

Hypothesis sends random methods, paths, query strings, bodies and content types, and random
patches of every type against existing objects. Every answer must be below 500, every error
a ``Status`` whose ``code`` is the HTTP status, and after each request the store must still
satisfy its invariants.
"""

from __future__ import annotations

import collections
import json
import ssl
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import orjson
import pytest
import yaml
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from setpoint.cluster.storage.store import Store
from tests.e2e.conftest import ThreadedCluster, http_client, wait_until
from tests.e2e.keepalive import KeepAliveClient
from tests.e2e.requestfuzz import Endpoint, Request, RequestFuzzer

NS = "prop"
GROUP = "prop.example.com"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP, "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.replicas >= 0",
                                                  "message": "replicas must not be negative"}],
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "size": {"x-kubernetes-int-or-string": True},
                        "tags": {"type": "array", "items": {"type": "string"},
                                 "x-kubernetes-list-type": "set"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "required": ["name"],
                                            "properties": {"name": {"type": "string"},
                                                           "port": {"type": "integer"}}}},
                        "free": {"type": "object",
                                 "x-kubernetes-preserve-unknown-fields": True},
                    }},
                "status": {"type": "object", "properties": {
                    "replicas": {"type": "integer"}, "phase": {"type": "string"}}},
            }}},
        }],
    },
}

# the objects random patches are aimed at: (collection path, object)
TARGETS: dict[str, tuple[str, dict[str, Any]]] = {
    f"/api/v1/namespaces/{NS}/configmaps/cm1": (
        f"/api/v1/namespaces/{NS}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "cm1", "labels": {"app": "prop"}}, "data": {"a": "1"}}),
    f"/apis/apps/v1/namespaces/{NS}/deployments/web": (
        f"/apis/apps/v1/namespaces/{NS}/deployments",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                      "containers": [{"name": "web", "image": "nginx",
                                      "ports": [{"containerPort": 80}]}]}}}}),
    f"/apis/{GROUP}/v1/namespaces/{NS}/widgets/w1": (
        f"/apis/{GROUP}/v1/namespaces/{NS}/widgets",
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w1"},
         "spec": {"replicas": 2, "tags": ["a"], "ports": [{"name": "http", "port": 80}]}}),
}
# more kinds, for the volume fuzzer: workloads with /scale, a pod, a service, a secret
TARGETS.update({
    f"/apis/apps/v1/namespaces/{NS}/statefulsets/db": (
        f"/apis/apps/v1/namespaces/{NS}/statefulsets",
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
         "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                  "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                      "containers": [{"name": "db", "image": "postgres"}]}}}}),
    f"/api/v1/namespaces/{NS}/replicationcontrollers/rc": (
        f"/api/v1/namespaces/{NS}/replicationcontrollers",
        {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
         "spec": {"replicas": 1, "selector": {"app": "rc"},
                  "template": {"metadata": {"labels": {"app": "rc"}}, "spec": {
                      "containers": [{"name": "rc", "image": "nginx"}]}}}}),
    f"/api/v1/namespaces/{NS}/pods/p1": (
        f"/api/v1/namespaces/{NS}/pods",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    f"/api/v1/namespaces/{NS}/services/svc": (
        f"/api/v1/namespaces/{NS}/services",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
         "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}),
    f"/api/v1/namespaces/{NS}/secrets/s1": (
        f"/api/v1/namespaces/{NS}/secrets",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"},
         "data": {"a": "YQ=="}}),
})
PATCH_PATHS = [*TARGETS,
               f"/apis/apps/v1/namespaces/{NS}/deployments/web/scale",
               f"/apis/apps/v1/namespaces/{NS}/deployments/web/status",
               f"/apis/{GROUP}/v1/namespaces/{NS}/widgets/w1/status",
               f"/apis/{GROUP}/v1/namespaces/{NS}/widgets/w1/scale"]

# -- strategies ----------------------------------------------------------------------------

printable = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
SEGMENTS = st.one_of(
    st.sampled_from([
        "v1", "v2", "namespaces", "default", "kube-system", NS, "configmaps", "secrets", "pods",
        "services", "events", "nodes", "serviceaccounts", "apps", "deployments", "replicasets",
        "status", "scale", "binding", "eviction", "finalize", "log", "exec", "proxy", "watch",
        "apiextensions.k8s.io", "customresourcedefinitions", f"widgets.{GROUP}", GROUP,
        "widgets", "w1", "cm1", "web", "coordination.k8s.io", "leases", "batch", "jobs",
        "rbac.authorization.k8s.io", "roles", "", ".", "..", "%2F", "%00", "a:b", "UPPER",
        "x" * 300, "-leading", "trailing-", "a.b.c"]),
    printable.map(lambda s: quote(s, safe="")),
)
STRUCTURED_PATH = st.builds(
    lambda prefix, ns, res, name, sub: "/".join(
        p for p in (prefix, "namespaces", ns, res, name, sub) if p is not None),
    st.sampled_from(["/api/v1", "/apis/apps/v1", f"/apis/{GROUP}/v1", "/apis/batch/v1",
                     "/apis/apiextensions.k8s.io/v1", "/apis/coordination.k8s.io/v1"]),
    st.sampled_from(["default", NS, "missing", "Bad_NS"]) | SEGMENTS,
    st.sampled_from(["configmaps", "pods", "deployments", "widgets", "leases", "jobs",
                     "secrets", "events"]) | SEGMENTS,
    st.none() | st.sampled_from(["cm1", "web", "w1", "new-one"]) | SEGMENTS,
    st.none() | st.sampled_from(["status", "scale", "binding", "eviction"]) | SEGMENTS,
)
RANDOM_PATH = st.builds(
    lambda root, segs, slash: "/" + "/".join([root, *segs]) + ("/" if slash else ""),
    st.sampled_from(["api", "apis"]), st.lists(SEGMENTS, max_size=6), st.booleans())
PATHS = st.one_of(STRUCTURED_PATH, RANDOM_PATH)

QUERY_KEYS = ["resourceVersion", "resourceVersionMatch", "limit", "continue", "labelSelector",
              "fieldSelector", "fieldValidation", "dryRun", "fieldManager", "force",
              "propagationPolicy", "gracePeriodSeconds", "orphanDependents", "timeoutSeconds",
              "allowWatchBookmarks", "sendInitialEvents", "pretty", "watch"]
QUERY_VALUES = st.one_of(
    st.sampled_from(["", "0", "1", "-1", "true", "false", "All", "Strict", "Warn", "Ignore",
                     "Orphan", "Foreground", "Background", "NotOlderThan", "Exact", "a=b",
                     "a in (b,c)", "!a", "a!=b", "metadata.name=cm1", "status.phase=Running",
                     "spec.nodeName=", "bogus.field=x", "99999999999999999999", "1e3", "%",
                     "=,=", "x!=", "a==b", "(", "abc", "9" * 40]),
    printable, st.integers(-(2**70), 2**70).map(str))
QUERIES = st.dictionaries(st.sampled_from(QUERY_KEYS) | printable, QUERY_VALUES, max_size=4)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | printable,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(printable | st.sampled_from(["name", "spec", "replicas", "$patch"]),
                      children, max_size=4),
    max_leaves=12)
NAMES = st.sampled_from(["cm1", "web", "w1", "new-one", "", "Bad_Name", "a" * 300, "x.y",
                         "-x"]) | printable
METADATA = st.fixed_dictionaries({}, optional={
    "name": NAMES, "generateName": NAMES, "namespace": st.sampled_from([NS, "other", ""]),
    "labels": st.dictionaries(printable, printable | st.integers(), max_size=3),
    "annotations": st.dictionaries(printable, printable, max_size=3),
    "finalizers": st.lists(st.sampled_from(["example.com/hold", "bad finalizer", "kubernetes"])
                           | printable, max_size=2),
    "resourceVersion": st.sampled_from(["1", "0", "999999", "abc", ""]) | printable,
    "uid": printable, "generation": st.integers(-5, 2**40),
    "ownerReferences": JSON_VALUES, "deletionTimestamp": st.none() | printable,
    "managedFields": JSON_VALUES,
})
OBJECTS = st.fixed_dictionaries(
    {"metadata": METADATA | JSON_VALUES},
    optional={
        "apiVersion": st.sampled_from(["v1", "apps/v1", f"{GROUP}/v1", "", "x/y/z"]) | printable,
        "kind": st.sampled_from(["ConfigMap", "Deployment", "Widget", "Pod", "Status", "List",
                                 ""]) | printable,
        "data": st.dictionaries(printable, printable | st.integers(), max_size=3),
        "spec": JSON_VALUES, "status": JSON_VALUES, "items": JSON_VALUES,
    })
CONTENT_TYPES = st.sampled_from([
    "application/json", "application/yaml", "application/merge-patch+json",
    "application/strategic-merge-patch+json", "application/json-patch+json",
    "application/apply-patch+yaml", "application/apply-patch+cbor", "text/plain",
    "application/vnd.kubernetes.protobuf", "application/cbor", "",
    "application/json; charset=utf-8", "application/json;as=Table", "*/*", "garbage/"])
ACCEPTS = st.sampled_from([
    None, "application/json", "application/yaml", "*/*", "text/html",
    "application/json;as=Table;g=meta.k8s.io;v=v1",
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    "application/json;as=Table;g=meta.k8s.io;v=v1beta1, application/json",
    "application/vnd.kubernetes.protobuf"])


def encode(value: Any, how: str) -> bytes:
    if how == "yaml":
        return yaml.safe_dump(value).encode()
    if how == "truncated":
        raw = json.dumps(value).encode()
        return raw[: max(1, len(raw) // 2)]
    return json.dumps(value).encode()


BODIES = st.one_of(
    st.none(),
    st.builds(encode, OBJECTS | JSON_VALUES, st.sampled_from(["json", "yaml", "truncated"])),
    st.binary(max_size=64),
    st.sampled_from([b"{", b"[]", b"null", b'{"a":1,"a":2}', b"\xff\xfe", b"- a\n- : b",
                     b"{\"metadata\": {\"name\": \"dup\", \"name\": \"dup2\"}}"]),
)

PATCH_OPS = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"])},
    optional={
        "path": st.sampled_from([
            "/data/a", "/data/b", "/metadata/labels/x", "/metadata/labels", "/spec/replicas",
            "/spec/template/spec/containers/0/image", "/spec/template/spec/containers/-",
            "/metadata/name", "/metadata/namespace", "/metadata/resourceVersion",
            "/metadata/uid", "/metadata/finalizers/-", "/metadata/finalizers", "/status",
            "/status/replicas", "/spec/tags/-", "/spec/ports/0", "/kind", "/apiVersion", "",
            "/", "~1", "/spec/free/x~0y"]) | printable,
        "from": st.sampled_from(["/data/a", "/spec", "/metadata/labels"]) | printable,
        "value": JSON_VALUES,
    })
DIRECTIVES = st.fixed_dictionaries({}, optional={
    "$patch": st.sampled_from(["replace", "delete", "merge", "bogus"]),
    "$retainKeys": st.lists(printable, max_size=2),
    "$setElementOrder/containers": st.lists(st.fixed_dictionaries({"name": printable}),
                                            max_size=2),
    "$deleteFromPrimitiveList/finalizers": st.lists(printable, max_size=2),
})
MERGE_BODIES = st.builds(lambda obj, directives, spec: {**obj, **directives, "spec": spec},
                         OBJECTS, DIRECTIVES,
                         st.fixed_dictionaries({}, optional={
                             "replicas": st.integers(-3, 2**33) | printable | st.none(),
                             "template": st.fixed_dictionaries({"spec": st.fixed_dictionaries({
                                 "containers": st.lists(
                                     st.fixed_dictionaries({"name": printable},
                                                           optional={"image": printable,
                                                                     "$patch": printable}),
                                     max_size=3)})}),
                             "tags": st.lists(printable, max_size=3) | JSON_VALUES,
                             "ports": JSON_VALUES, "size": JSON_VALUES, "free": JSON_VALUES,
                         }) | JSON_VALUES)


@st.composite
def patch_requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], bytes, str]:
    path = draw(st.sampled_from(PATCH_PATHS))
    kind = draw(st.sampled_from(["json", "merge", "strategic", "apply"]))
    query = draw(st.dictionaries(
        st.sampled_from(["fieldManager", "force", "dryRun", "fieldValidation"]),
        st.sampled_from(["", "x", "true", "false", "All", "Strict", "Warn", "Ignore"]),
        max_size=2))
    if kind == "json":
        body = encode(draw(st.lists(PATCH_OPS, max_size=4) | JSON_VALUES),
                      draw(st.sampled_from(["json", "json", "truncated"])))
        content_type = "application/json-patch+json"
    elif kind == "apply":
        body = encode(draw(OBJECTS | MERGE_BODIES), draw(st.sampled_from(["yaml", "json"])))
        content_type = "application/apply-patch+yaml"
    else:
        body = encode(draw(MERGE_BODIES), "json")
        content_type = f"application/{kind}-patch+json"
    return "PATCH", path, query, body, content_type


@st.composite
def random_requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], bytes | None, str]:
    method = draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS",
                                   "PROPFIND", "get"]))
    return method, draw(PATHS), draw(QUERIES), draw(BODIES), draw(CONTENT_TYPES)


REQUESTS = st.one_of(random_requests(), patch_requests())

# -- the server ------------------------------------------------------------------------------


class Target:
    """The in-process server, an HTTP client to it, and the objects patches aim at.

    ``http`` sets the objects up and reads them back; ``raw`` sends the random requests,
    as ``http`` would send them at a third of its cost (tests/e2e/keepalive.py).
    """

    def __init__(self, cluster: ThreadedCluster, http: httpx.Client,
                 raw: KeepAliveClient) -> None:
        self.cluster = cluster
        self.http = http
        self.raw = raw

    def ensure_objects(self, aimed_at: str | None = None) -> None:
        """Re-create the patch targets that earlier random requests deleted: all of them, or
        only the one a patch to ``aimed_at`` (an object or its subresource) needs."""
        if self.http.get(f"/api/v1/namespaces/{NS}").status_code == 404:
            self.http.post("/api/v1/namespaces", json={"metadata": {"name": NS}})
        targets = TARGETS if aimed_at is None else {
            path: made for path, made in TARGETS.items()
            if aimed_at == path or aimed_at.startswith(path + "/")}
        crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}"
        if any(path.startswith(f"/apis/{GROUP}/") for path in targets) \
                and self.http.get(crd_path).status_code == 404:
            self.http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           json=WIDGET_CRD)
            wait_until(lambda: self.http.get(f"/apis/{GROUP}/v1").status_code == 200)
        for path, (collection, obj) in targets.items():
            if self.http.get(path).status_code == 404:
                self.http.post(collection, json=obj)

    def store(self) -> Store:
        assert self.cluster.cluster is not None
        return self.cluster.cluster.api.store


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    cluster = ThreadedCluster()
    running = cluster.start()
    # the generators send reads at revisions never reached ("99999999"): each would wait
    # the watch cache's 3 s for the same 504 (tests/cluster/fidelity/
    # test_resource_version_freshness.py proves the wait)
    cluster.call(lambda: setattr(running.api.freshness, "block_timeout", 0.0))
    with http_client(running) as http:
        raw = KeepAliveClient(http, ssl.create_default_context(cafile=str(running.ca_file)))
        tgt = Target(cluster, http, raw)
        tgt.ensure_objects()
        yield tgt
        raw.close()
    cluster.stop()


def is_watch(path: str, query: dict[str, str]) -> bool:
    """A watch to kube-apiserver: the legacy ``/watch/`` path, or a ``watch`` parameter the
    parameter codec reads as true (Convert_Slice_string_To_bool: present, not "0" or "false")."""
    value = query.get("watch")
    flagged = value is not None and value != "0" and value.lower() != "false"
    return "/watch/" in path or path[-6:] == "/watch" or flagged


def send(raw: KeepAliveClient, method: str, path: str, query: dict[str, str],
         body: bytes | None, content_type: str, accept: str | None) -> tuple[int, str, bytes]:
    """Send one request; a watch is read only up to its headers (and its body if it failed)."""
    url = path + ("?" + urlencode(query) if query else "")
    headers = {"Content-Type": content_type} if content_type else {}
    if accept:
        headers["Accept"] = accept
    streaming = is_watch(path, query)
    answer = raw.send(method, url, body, headers, read=not streaming)
    return answer.status, answer.content_type, answer.body


# libyaml's parser where PyYAML was built with it: the server's YAML answers (lists of every
# object of a kind) are most of the fuzz's own time in the pure-Python one
YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(raw: bytes) -> Any:
    return yaml.load(raw, Loader=YAML_LOADER)  # a safe loader, C or Python


def decoded_status(raw: bytes) -> Any:
    """A Status answer in JSON, YAML or protobuf (the ``k8s\\x00`` envelope)."""
    if raw.startswith(b"k8s\x00"):
        from setpoint.machinery.protobuf import decode

        return decode(raw)
    if raw.lstrip().startswith(b"{"):
        return json.loads(raw)
    return load_yaml(raw)


def check_answer(method: str, status: int, ctype: str, raw: bytes) -> None:
    assert status < 500, f"{status}: {raw[:2000]!r}"
    if status < 400 or method == "HEAD":
        return
    if status == 404 and raw == b"404 page not found\n":
        # kube-apiserver's answer for paths no API serves (golden discovery-version-health
        # unknown-path and unknown-api-group): plain text, not a Status
        assert ctype.startswith("text/plain"), ctype
        return
    # ErrorNegotiated: the Status in the representation the Accept picked
    assert ctype.split(";")[0] in ("application/json", "application/yaml",
                                   "application/vnd.kubernetes.protobuf"), \
        f"error answered as {ctype!r}: {raw[:500]!r}"
    body = decoded_status(raw)
    assert body.get("kind") == "Status", body
    assert body.get("apiVersion") == "v1", body
    assert body.get("status") == "Failure", body
    assert body.get("code") == status, body
    assert isinstance(body.get("message", ""), str), body
    assert isinstance(body.get("reason", ""), str), body
    for cause in body.get("details", {}).get("causes", []):
        assert isinstance(cause, dict) and set(cause) <= {"reason", "message", "field"}, body


# What one stored object's own checks found, by its resource and key: an object is stored
# as immutable JSON bytes, so while the same bytes are stored the same checks find the same
# (the checks against the rest of the store, revision, history and other objects' versions,
# run every time)
_Intrinsic = tuple[str, list[str], int | None]  # where, problems, resourceVersion
_checked: dict[tuple[str, str], tuple[bytes, _Intrinsic]] = {}


def _object_problems(resource: str, key: tuple[str, str], raw: bytes) -> _Intrinsic:
    """The checks of one stored object that need nothing but the object."""
    cached = _checked.get((resource, f"{key[0]}/{key[1]}"))
    if cached is not None and cached[0] is raw:
        return cached[1]
    ns, name = key
    where = f"{resource} {ns}/{name}"
    problems: list[str] = []
    rv: int | None = None
    obj = orjson.loads(raw)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        problems.append(f"{where}: metadata is {meta!r}")
    else:
        if meta.get("name") != name or not name:
            problems.append(f"{where}: metadata.name is {meta.get('name')!r}")
        if meta.get("namespace", "") != ns:
            problems.append(f"{where}: metadata.namespace is {meta.get('namespace')!r}")
        if not isinstance(meta.get("uid"), str) or not meta["uid"]:
            problems.append(f"{where}: uid is {meta.get('uid')!r}")
        try:
            rv = int(meta.get("resourceVersion", ""))
        except ValueError:
            problems.append(f"{where}: resourceVersion {meta.get('resourceVersion')!r}")
        try:
            orjson.dumps(obj)
        except TypeError as exc:
            problems.append(f"{where}: not JSON: {exc}")
    found = (where, problems, rv)
    _checked[(resource, f"{ns}/{name}")] = (raw, found)
    return found


def store_problems(store: Store) -> list[str]:
    """Every way the store breaks its invariants (runs on the server's loop thread)."""
    problems: list[str] = []
    seen: dict[int, tuple[str, str, str]] = {}
    for resource in store.resources():
        scan = store.scan(resource, "", "", None)
        stored = list(scan) if scan is not None else []
        keys = store.keys(resource)
        if len(stored) != len(keys):
            problems.append(f"{resource}: {len(keys)} keys but {len(stored)} objects")
        history = store.events_since(resource, store.compacted_revision) or []
        last = {(ev.namespace, ev.name): ev for ev in history}
        for (ns, name), (_, raw) in zip(keys, stored, strict=False):
            where, own, rv = _object_problems(resource, (ns, name), raw)
            problems += own
            if rv is None:
                continue
            if not 0 < rv <= store.revision:
                problems.append(f"{where}: resourceVersion {rv} beyond {store.revision}")
            if rv in seen:
                problems.append(f"{where}: resourceVersion {rv} also on {seen[rv]}")
            seen[rv] = (resource, ns, name)
            event = last.get((ns, name))
            if event is not None and (event.type == "DELETED" or event.revision != rv):
                problems.append(f"{where}: stored at {rv} but last event is {event.type} "
                                f"at {event.revision}")
        for (ns, name), event in last.items():
            if event.type == "DELETED" and store.get(resource, ns, name) is not None:
                problems.append(f"{resource} {ns}/{name}: deleted at {event.revision} "
                                "but still stored")
    return problems


def list_every_resource(http: httpx.Client) -> list[str]:
    """LIST each listable resource of every served group version; the failures."""
    failures: list[str] = []
    versions = ["/api/v1"]
    for group in http.get("/apis").json()["groups"]:
        versions += [f"/apis/{v['groupVersion']}" for v in group["versions"]]
    for base in versions:
        found = http.get(base)
        if found.status_code != 200:
            failures.append(f"GET {base}: {found.status_code}")
            continue
        for res in found.json()["resources"]:
            if "/" in res["name"] or "list" not in res["verbs"]:
                continue
            listed = http.get(f"{base}/{res['name']}")
            if listed.status_code != 200 or not isinstance(listed.json().get("items"), list):
                failures.append(f"LIST {base}/{res['name']}: {listed.status_code} "
                                f"{listed.text[:300]}")
    return failures


# Requests the random search found to break the server, kept so that every run checks them,
# with what kube-apiserver answers: (id, method, path, query, body, content type, status).
W1 = f"/apis/{GROUP}/v1/namespaces/{NS}/widgets/w1"
WEB = f"/apis/apps/v1/namespaces/{NS}/deployments/web"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"
KNOWN_BAD: list[tuple[str, str, str, dict[str, str], bytes | None, str, int | None]] = [
    # a patched Scale that no longer decodes is 422 Invalid with a "patch" cause
    # (apiserver endpoints/handlers/patch.go, jsonPatcher.applyPatchToCurrentObject)
    ("scale-spec-not-an-object", "PATCH", f"{WEB}/scale", {}, b'{"spec": true}', MERGE, 422),
    ("scale-metadata-not-an-object", "PATCH", f"{WEB}/scale", {}, b'{"metadata": 5}', MERGE,
     422),
    ("cr-scale-spec-not-an-object", "PATCH", f"{W1}/scale", {}, b'{"spec": "x"}', MERGE, 422),
    # an integer field given a number beyond int64: schema validation, 422 on spec.replicas
    ("cr-integer-overflow", "PATCH", W1, {}, b'{"spec": {"replicas": 1.08e+58}}', MERGE, 422),
    # YAML numbers beyond 64 bits decode as they do in JSON: a 400 for a string field
    ("yaml-big-integer", "POST", f"/api/v1/namespaces/{NS}/configmaps", {},
     b"metadata: {name: big}\ndata: {a: 123456789012345678901234567890}\n",
     "application/yaml", 400),
    ("apply-yaml-big-integer", "PATCH", W1, {"fieldManager": "m"},
     b"metadata:\n  labels:\n    a: 123456789012345678901234567890\n", APPLY, None),
    # a lone UTF-16 surrogate escape in YAML is not a server error
    ("apply-yaml-lone-surrogate", "PATCH", f"/api/v1/namespaces/{NS}/configmaps/cm1",
     {"fieldManager": "m"}, b'data: {"a": "\\ud983x"}\n', APPLY, None),
    # unknown fields with control characters end up in a Warning header: still a 200
    ("warning-with-control-character", "PATCH", WEB, {"fieldValidation": "Warn"},
     b'{"spec": {"a\\nb": 1}}', MERGE, 200),
    # names with an encoded newline reach the API: a NotFound Status, not aiohttp's text
    ("newline-in-name", "GET", f"/api/v1/namespaces/{NS}/configmaps/a%0Ab", {}, None, "", 404),
    ("newline-in-resource", "GET", f"/api/v1/namespaces/{NS}/a%0Ab/binding", {}, None, "", 404),
]


@pytest.mark.parametrize(("method", "path", "query", "body", "content_type", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in KNOWN_BAD])
def test_known_malformed_request_is_answered_with_a_status(
        target: Target, method: str, path: str, query: dict[str, str], body: bytes | None,
        content_type: str, expected: int | None) -> None:
    target.ensure_objects()
    status, ctype, raw = send(target.raw, method, path, query, body, content_type, None)
    check_answer(method, status, ctype, raw)
    if expected is not None:
        assert status == expected, raw[:1000]
    if status == 404:
        assert json.loads(raw)["reason"] == "NotFound"
    assert not target.cluster.call(lambda: store_problems(target.store()))


def test_random_requests_never_fail_the_server(target: Target) -> None:
    # derandomized: the same examples on every run, so a failure never comes and goes
    @settings(max_examples=300, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(request=REQUESTS, accept=ACCEPTS)
    # a DELETE of a collection whose body is no JSON: Go's own 500 (handlers/delete.go)
    @example(request=("DELETE", "/api/v1/namespaces/default/configmaps", {}, b"\x00",
                      "application/json"), accept=None)
    def one_request(request: tuple[str, str, dict[str, str], bytes | None, str],
                    accept: str | None) -> None:
        method, path, query, body, content_type = request
        if path in PATCH_PATHS:  # the patch's own target, not all eleven (a GET each)
            target.ensure_objects(aimed_at=path)
        status, ctype, raw = send(target.raw, method, path, query, body, content_type, accept)
        event(f"{method if path not in PATCH_PATHS else content_type} -> {status}")
        sent = Request(method, path, query, body, content_type, accept)
        if not (unparsable_resource_version_500(method, status, raw)
                or undecodable_delete_options_500(sent, status, raw)):
            check_answer(method, status, ctype, raw)
        problems = target.cluster.call(lambda: store_problems(target.store()))
        assert not problems, problems

    one_request()
    assert not list_every_resource(target.http)


# -- volume: a seeded generator of malformed requests over every endpoint ------------------

# kube-apiserver itself answers these with a 5xx, so the server does too:
# - pods/binding whose Binding fails ValidatePodBinding: BindingREST.Create returns the
#   field.ErrorList's aggregate, not a Status (pkg/registry/core/pod/storage/storage.go)
# - pods/eviction of a pod covered by several budgets: a plain error
#   (pkg/registry/core/pod/storage/eviction.go, "more than one PodDisruptionBudget")
# - a read at a resourceVersion the store has not reached: 504 Timeout
#   (k8s.io/apiserver/pkg/storage/errors.go, NewTooLargeResourceVersionError), or etcd's
#   ErrFutureRev for an Exact read (etcd3/errors.go interpretListError passes it through)
# - a read the watch cache serves at a resourceVersion that is no uint64: the versioner's
#   storage InvalidError, no Status (storage/api_object_versioner.go ParseResourceVersion)
# - server-side apply to a stored object that is not a valid typed value (an associative list
#   item without its key): a plain error from structuredMergeManager.Apply (k8s.io/apimachinery
#   pkg/util/managedfields/internal/structuredmerge.go, "failed to create typed live object"),
#   only for the fields whose kind's validation lets such an item be stored (TYPED_LIVE_500)
# - a pods/services/nodes proxy request whose target has no endpoint or cannot be reached
#   (pkg/registry/core/service/storage/storage.go ResourceLocation's 503s; apimachinery
#   pkg/util/proxy transport.go "error trying to reach service", upgradeaware.go's dial and
#   "invalid upgrade response" 500s; a node without addresses, pkg/registry/core/node/
#   strategy.go ResourceLocation's GetPreferredNodeAddress error, a plain 500): PROXY_5XX
PROXY_5XX = ("no endpoints available for service", "no service port",
             "no preferred addresses found; known addresses: ",
             "error trying to reach service: ", "error dialing backend: ",
             "invalid upgrade response: ")
TYPED_LIVE_500 = [
    # ValidateServiceAccount checks metadata only (pkg/apis/core/validation/validation.go)
    ("serviceaccounts", "ServiceAccount", ".secrets"),
    # ValidateServiceStatusUpdate checks metadata and status.loadBalancer only (same file)
    ("services", "Service", ".status.conditions"),
    # ValidateReplicationControllerStatusUpdate checks metadata and the replica counts only
    ("replicationcontrollers", "ReplicationController", ".status.conditions"),
]


def kube_apiserver_answers_5xx(path: str, status: int, raw: bytes) -> bool:
    text = raw.decode("utf-8", "replace")
    try:  # a Status in whichever representation the Accept picked
        message = str(decoded_status(raw).get("message", ""))
    except (ValueError, AttributeError, yaml.YAMLError):
        message = ""
    binding = path.endswith("/binding") or "/bindings" in path
    if status == 504:
        return "Too large resource version" in text
    if status == 500 and (message.startswith("resourceVersion: Invalid value: ")
                          or "required revision is a future revision" in text):
        return True
    if status == 500 and message.startswith("failed to create typed live object ("):
        return any(f"/{resource}/" in path and f"Kind={kind}): {field}: element " in text
                   for resource, kind, field in TYPED_LIVE_500)
    if status in (500, 503) and "/proxy" in path and any(m in text for m in PROXY_5XX):
        return True
    return (binding and "target." in text) or (
        path.endswith("/eviction") and "more than one PodDisruptionBudget" in text)


def undecodable_delete_options_500(req: Request, status: int, raw: bytes) -> bool:
    """kube-apiserver 1.32 answers a DELETE body it cannot decode as DeleteOptions with the
    decoder's bare error: a 500 Status without a reason (handlers/delete.go ``scope.err``;
    a 400 from 1.35, kubernetes/kubernetes#133358). Never the server's own crash answer."""
    if status != 500 or req.method != "DELETE" or req.body is None:
        return False
    answer = decoded_status(raw)
    return (answer.get("kind") == "Status" and answer.get("code") == 500
            and "reason" not in answer
            and "an unexpected error occurred" not in answer.get("message", ""))


def undeclared_apply_field_500(req: Request, status: int, raw: bytes) -> bool:
    """kube-apiserver 1.32 answers a server-side apply whose body is not a valid typed value
    (a field the schema does not declare, an associative list item without its key) with
    structured-merge-diff's plain error, a 500 without a reason,
    whatever fieldValidation says (k8s.io/apimachinery pkg/util/managedfields/internal/
    structuredmerge.go, "failed to create typed patch object"; kubernetes/kubernetes#122480,
    #139253)."""
    if status != 500 or req.method != "PATCH" or "apply-patch" not in req.content_type:
        return False
    answer = decoded_status(raw)
    # the same path fails an associative list item without its key alike (#118877)
    return "reason" not in answer and answer.get("message", "").startswith(
        "failed to create typed patch object (")


def unparsable_resource_version_500(method: str, status: int, raw: bytes) -> bool:
    """kube-apiserver 1.32 answers a written object whose metadata.resourceVersion is no
    number with the versioner's plain error, a 500 without a reason (registry/generic/
    registry/store.go Update: ``Versioner().ObjectResourceVersion``; storage/
    api_object_versioner.go), as the recorded scenario configmap-conflicts shows."""
    if status != 500 or method not in ("PUT", "PATCH"):
        return False
    answer = decoded_status(raw)
    return "reason" not in answer and answer.get("message", "").startswith(
        "strconv.ParseUint: parsing ")


def check_fuzzed_answer(req: Request, status: int, ctype: str, raw: bytes) -> None:
    """Below 500 (but for kube-apiserver's own 500s); an error is a Status; a success that
    has a body is a JSON or YAML object."""
    if status >= 500 and (kube_apiserver_answers_5xx(req.path, status, raw)
                          or undecodable_delete_options_500(req, status, raw)
                          or undeclared_apply_field_500(req, status, raw)
                          or unparsable_resource_version_500(req.method, status, raw)):
        return
    check_answer(req.method, status, ctype, raw)
    if status < 300 and raw and req.method not in ("HEAD",) and not is_watch(
            req.path, req.query):
        if ctype.startswith("application/json"):
            body = json.loads(raw)
            assert isinstance(body, dict) and (body.get("kind") or "paths" in body), raw[:500]
        elif ctype.startswith("application/yaml"):
            assert isinstance(load_yaml(raw), dict), raw[:500]


def discovered_endpoints(http: httpx.Client) -> list[Endpoint]:
    """Every resource of every served group version, with its subresources' kinds."""
    bases = ["/api/v1"] + [f"/apis/{v['groupVersion']}" for g in http.get("/apis").json()[
        "groups"] for v in g["versions"]]
    endpoints = []
    for base in bases:
        listed = http.get(base).json()["resources"]
        subresources: dict[str, dict[str, str]] = {}
        for res in listed:
            if "/" in res["name"]:
                parent, sub = res["name"].split("/", 1)
                subresources.setdefault(parent, {})[sub] = res["kind"]
        endpoints += [Endpoint(base, res["name"], res["kind"], res["namespaced"], res["verbs"],
                               subresources.get(res["name"], {}))
                      for res in listed if "/" not in res["name"]]
    return endpoints


def read_every_object(http: httpx.Client) -> list[str]:
    """LIST every type (list_every_resource), then GET every object each list returned."""
    failures = list_every_resource(http)
    for ep in discovered_endpoints(http):
        if "list" not in ep.verbs or "get" not in ep.verbs:
            continue
        for item in http.get(f"{ep.base}/{ep.resource}").json().get("items", []):
            meta = item["metadata"]
            ns = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
            got = http.get(f"{ep.base}{ns}/{ep.resource}/{quote(meta['name'], safe='')}")
            if got.status_code != 200:
                failures.append(f"GET {ep.resource} {meta['name']}: {got.status_code}")
    return failures


FUZZED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def reached(endpoints: list[Endpoint], req: Request) -> set[str]:
    """What a request was sent to: ``<base>/<resource> <method>`` for its endpoint, and
    ``<base>/<resource>/<subresource>`` when it names one of the endpoint's subresources."""
    hits: set[str] = set()
    for ep in endpoints:
        if not req.path.startswith(ep.base + "/"):
            continue
        rest = req.path[len(ep.base) + 1:].split("/")
        if ep.namespaced and rest[0] == "namespaces" and len(rest) > 2:
            rest = rest[2:]  # past namespaces/<ns>: a namespaced endpoint is also cluster-wide
        if rest[0] != ep.resource:
            continue
        hits.add(f"{ep.base}/{ep.resource} {req.method}")
        if len(rest) == 3 and rest[2] in ep.subresources:
            hits.add(f"{ep.base}/{ep.resource}/{rest[2]}")
    return hits


def every_target(endpoints: list[Endpoint]) -> set[str]:
    """Each endpoint under each method the fuzzer sends, and each subresource."""
    return ({f"{ep.base}/{ep.resource} {m}" for ep in endpoints for m in FUZZED_METHODS}
            | {f"{ep.base}/{ep.resource}/{sub}" for ep in endpoints for sub in ep.subresources})


def fuzz(target: Target, seed: int, budget: int,
         covered: set[str] | None = None) -> collections.Counter[str]:
    """Send ``budget`` generated requests; every answer checked, the store every 500.
    ``covered`` gathers what the requests reached (``reached``)."""
    http = target.http
    names = {"configmaps": ["cm1"], "deployments": ["web"], "widgets": ["w1"],
             "statefulsets": ["db"], "replicationcontrollers": ["rc"], "pods": ["p1"],
             "services": ["svc"], "secrets": ["s1"], "serviceaccounts": ["default"]}
    endpoints = discovered_endpoints(http)
    fuzzer = RequestFuzzer(seed, endpoints, NS, names,
                           {"widgets": WIDGET_CRD["spec"]["versions"][0]["schema"][
                               "openAPIV3Schema"]})
    seen: collections.Counter[str] = collections.Counter()
    for i in range(budget):
        if i % 250 == 0:
            target.ensure_objects()
        req = fuzzer.request()
        status, ctype, raw = send(target.raw, req.method, req.path, req.query, req.body,
                                  req.content_type, req.accept)
        seen[f"{req.method} {status}"] += 1
        if covered is not None:
            covered |= reached(endpoints, req)
        try:
            check_fuzzed_answer(req, status, ctype, raw)
        except AssertionError as exc:
            raise AssertionError(f"request {i} of seed {seed}: {req}") from exc
        if i % 500 == 499:
            problems = target.cluster.call(lambda: store_problems(target.store()))
            assert not problems, (i, req, problems)
    return seen


# Seed 1 has sent to every endpoint under every method by its 1,967th request and to every
# subresource by its 8,317th (60 endpoints, 45 subresources on 2026-11-27): 10,000 covers
# both, and the test checks that it still does. The slow variants send 200,000 more.
FUZZ_BUDGET = 10_000
SLOW_FUZZ_BUDGET = 200_000


# 10,000 requests take about 20 s on a quiet machine: a loaded one may need several times that
@pytest.mark.timeout(600)
def test_generated_malformed_requests_never_fail_the_server(target: Target) -> None:
    covered: set[str] = set()
    seen = fuzz(target, seed=1, budget=FUZZ_BUDGET, covered=covered)
    assert sum(seen.values()) == FUZZ_BUDGET
    assert not every_target(discovered_endpoints(target.http)) - covered
    assert not target.cluster.call(lambda: store_problems(target.store()))
    assert not read_every_object(target.http)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
def test_more_generated_malformed_requests(target: Target, seed: int) -> None:
    fuzz(target, seed=seed, budget=SLOW_FUZZ_BUDGET // 10)
    assert not target.cluster.call(lambda: store_problems(target.store()))
    assert not read_every_object(target.http)
