"""LIST and WATCH answers checked against kube-apiserver 1.32's source, one rule a test.

All tests share one server (``module_api``) and a namespace of their own, deleted at the end.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio
import yaml

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import create_configmap, failure

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAMESPACE = "watch-list-audit"
NS = f"/api/v1/namespaces/{NAMESPACE}"
LEGACY_WATCH = f"/api/v1/watch/namespaces/{NAMESPACE}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def namespace(module_api: API) -> AsyncIterator[str]:
    status, out = await module_api.post("/api/v1/namespaces",
                                        {"metadata": {"name": NAMESPACE}})
    assert status == 201, out
    yield NAMESPACE
    status, out = await module_api.delete(f"/api/v1/namespaces/{NAMESPACE}")
    assert status == 200, out


def _events(status: int, body: Any) -> tuple[int, list[tuple[str, str | None]]]:
    """A finished watch's status and its events as (type, object name)."""
    lines = body.splitlines() if isinstance(body, str) else [orjson.dumps(body)]
    events = [orjson.loads(line) for line in lines if line]
    return status, [(e["type"], e["object"].get("metadata", {}).get("name")) for e in events]


async def test_a_named_watch_takes_only_a_selector_of_its_own_name(
        module_api: API, namespace: str) -> None:
    """Rule: a watch of one object (the deprecated ``/watch/.../NAME`` path) treats the name
    as a ``metadata.name`` selector; a field selector given beside it must pin that same name
    (``RequiresExactMatch("metadata.name")``), else the request is a 400, checked after the
    kind's field label conversion (whose own 400 comes first).
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go (ListResource: "fieldSelector
    metadata.name doesn't match requested name"), pkg/endpoints/installer.go (the "WATCH"
    action: restfulListResource with forceWatch)."""
    for name in ("named-a", "named-b"):
        await create_configmap(module_api, name, NS)
    path = f"{LEGACY_WATCH}/configmaps/named-a?timeoutSeconds=1"
    mismatch = failure(400, "BadRequest",
                       "fieldSelector metadata.name doesn't match requested name")
    assert await module_api.get(f"{path}&fieldSelector=metadata.name%3Dnamed-b") == (
        400, mismatch)
    assert await module_api.get(f"{path}&fieldSelector=metadata.namespace%3D{namespace}") == (
        400, mismatch)
    assert await module_api.get(f"{path}&fieldSelector=data.a%3D1") == (400, failure(
        400, "BadRequest",
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'))
    assert _events(*await module_api.get(f"{path}&fieldSelector=metadata.name%3Dnamed-a")) == (
        200, [("ADDED", "named-a")])
    assert _events(*await module_api.get(path)) == (200, [("ADDED", "named-a")])


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
PARTIAL = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"


def _stream(body: Any) -> list[dict[str, Any]]:
    lines = body.splitlines() if isinstance(body, str) else [orjson.dumps(body)]
    return [orjson.loads(line) for line in lines if line]


async def _watch(api: API, path: str, accept: str) -> tuple[int, Any]:
    """A GET read to its end: a watch's events as text, a Status decoded (ErrorNegotiated
    writes it in the Accept's representation: YAML when the Accept picks YAML)."""
    async with api.session.get(api.cluster.url + path, headers={"Accept": accept},
                               ssl=api.ssl) as resp:
        text = await resp.text()
        if resp.status != 200:
            if resp.headers["Content-Type"] == "application/yaml":
                return resp.status, yaml.safe_load(text)
            return resp.status, orjson.loads(text)
        return resp.status, text


async def _list_rv(api: API, kind_path: str) -> str:
    status, out = await api.get(kind_path)
    assert status == 200, out
    return str(out["metadata"]["resourceVersion"])


async def test_a_table_watch_serves_its_bookmarks_as_tables(module_api: API,
                                                            namespace: str) -> None:
    """Rule: in a watch asking for Tables, a bookmark's object goes through the same
    transformation as any event's: it is a Table of one row whose object is the bookmark's
    PartialObjectMetadata, and only the watch's first event carries column definitions.
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/response.go (watchEncoder.Encode:
    a Bookmark is encoded by doEncode through the embedded encoder; watchEmbeddedEncoder.
    doEncode: doTransformObject, then NoHeaders after the first object; asTable)."""
    await create_configmap(module_api, "table-bookmark", NS)
    rv = await _list_rv(module_api, f"{NS}/configmaps")
    status, body = await _watch(
        module_api, f"{NS}/configmaps?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"
        "&timeoutSeconds=3", TABLE)
    events = _stream(body)
    assert status == 200
    assert [e["type"] for e in events] == ["BOOKMARK"]
    table = events[0]["object"]
    assert (table["kind"], table["apiVersion"], table["metadata"]) == (
        "Table", "meta.k8s.io/v1", {"resourceVersion": rv})
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    [row] = table["rows"]
    assert row["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": {"resourceVersion": rv, "creationTimestamp": None}}


async def test_a_metadata_watch_serves_its_bookmarks_as_partial_metadata(
        module_api: API, namespace: str) -> None:
    """Rule: in a watch asking for PartialObjectMetadata, bookmarks are PartialObjectMetadata
    too, and the initial-events-end bookmark's list blueprint is an empty
    PartialObjectMetadataList (what a metadata informer's watch-list decodes).
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/response.go (watchEncoder.Encode,
    doTransformObject "PartialObjectMetadata"; watchListTransformer.
    transformInitialEventsListBlueprint: asPartialObjectMetadataList of the empty list)."""
    await create_configmap(module_api, "partial-bookmark", NS)
    status, body = await _watch(
        module_api, f"{NS}/configmaps?watch=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1", PARTIAL)
    assert status == 200
    bookmarks = [e["object"] for e in _stream(body) if e["type"] == "BOOKMARK"]
    assert bookmarks, body
    end = bookmarks[0]
    assert (end["kind"], end["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    annotations = end["metadata"]["annotations"]
    assert annotations["k8s.io/initial-events-end"] == "true"
    blueprint = base64.b64decode(annotations["kubernetes.io/initial-events-list-blueprint"])
    assert blueprint == (b'{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",'
                         b'"metadata":{},"items":null}\n')


@pytest.mark.parametrize("query", [
    "watch=true&allowWatchBookmarks=true",
    "watch=true&resourceVersion=0&allowWatchBookmarks=true",
    "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
])
async def test_a_watch_list_request_is_never_served_as_a_table(
        module_api: API, namespace: str, query: str) -> None:
    """Rule: a watch-list request (initial events, defaulted for a watch from "" or "0"
    when neither sendInitialEvents nor resourceVersionMatch is given, plus bookmarks) may not
    be transformed to a Table: with only a Table acceptable it is a 406, with a fallback it
    is served as plain objects. A watch without bookmarks still gets Tables.
    Source: k8s.io/apimachinery v0.32.0 pkg/apis/meta/internalversion/defaults.go
    (SetListOptionsDefaults), k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go
    (isListWatchRequest; watchListEndpointRestrictions.AllowsMediaTypeTransform refuses
    "Table"; NegotiateOutputMediaType's NotAcceptable)."""
    path = f"{NS}/configmaps?{query}&timeoutSeconds=1"
    assert await _watch(module_api, path, TABLE) == (406, failure(
        406, "NotAcceptable", "only the following media types are accepted: application/json, "
        "application/yaml, application/vnd.kubernetes.protobuf"))
    status, body = await _watch(module_api, path, f"{TABLE},application/json")
    assert status == 200
    assert {e["object"]["kind"] for e in _stream(body)} == {"ConfigMap"}
    status, body = await _watch(
        module_api, path.replace("allowWatchBookmarks=true", "allowWatchBookmarks=false"), TABLE)
    assert (status, {e["object"]["kind"] for e in _stream(body)}) == (200, {"Table"})


PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


async def test_partial_metadata_is_one_object_and_its_list_a_list(module_api: API,
                                                                  namespace: str) -> None:
    """Rule: PartialObjectMetadata is the form of one object and PartialObjectMetadataList of
    a list; asked of the other, the transformation fails with a 406 naming the Go type the
    registry returned (an internal type, or unstructured for a custom resource). In a watch,
    where every event's object is one object, a PartialObjectMetadataList transformation
    fails on each, the object is passed on as it is to an encoder of the meta.k8s.io codecs,
    which cannot encode a ConfigMap, and the stream ends at that first event (200, no event).
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/response.go (asPartialObjectMetadata
    "you requested PartialObjectMetadata, but the requested object is a list (%T)",
    asPartialObjectMetadataList "... is not a list (%T)", errNotAcceptable; watchEmbeddedEncoder
    .doEncode "result = obj"; targetEncodingForTransform: GetMetaInternalVersionCodecs, whose
    scheme (apimachinery pkg/apis/meta/internalversion/scheme) holds meta kinds only, so the
    versioning codec's ObjectKinds fails), pkg/endpoints/handlers/watch.go (WatchServer.
    HandleHTTP returns on the encoder's error), pkg/endpoints/handlers/rest.go (RequestScope.
    AllowsMediaTypeTransform: both kinds negotiable on every endpoint)."""
    await create_configmap(module_api, "partial-forms", NS)
    assert await _watch(module_api, f"{NS}/configmaps", PARTIAL) == (406, failure(
        406, "NotAcceptable", "you requested PartialObjectMetadata, but the requested object is "
        "a list (*core.ConfigMapList)"))
    assert await _watch(module_api, f"{NS}/configmaps/partial-forms", PARTIAL_LIST) == (
        406, failure(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the "
                     "requested object is not a list (*core.ConfigMap)"))
    status, listed = await _watch(module_api, f"{NS}/configmaps", PARTIAL_LIST)
    assert (status, orjson.loads(listed)["kind"]) == (200, "PartialObjectMetadataList")
    status, body = await _watch(
        module_api, f"{NS}/configmaps?watch=true&fieldSelector=metadata.name%3Dpartial-forms"
        "&timeoutSeconds=1", PARTIAL_LIST)
    assert (status, _stream(body)) == (200, [])


async def test_a_watch_has_no_yaml_stream(module_api: API, namespace: str) -> None:
    """Rule: a watch negotiates a stream serializer, and YAML has none: a watch whose Accept
    picks YAML is a 406 naming the stream media types (after its selectors are checked);
    "*/*" or JSON gets the JSON stream.
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/watch.go (serveWatchHandler),
    pkg/endpoints/handlers/negotiation/negotiate.go (NegotiateOutputMediaTypeStream,
    MediaTypesForSerializer's ";stream=watch"), k8s.io/apimachinery v0.32.0
    pkg/runtime/serializer/codec_factory.go (no StreamSerializer for YAML)."""
    path = f"{NS}/configmaps?watch=true&timeoutSeconds=1"
    not_acceptable = failure(406, "NotAcceptable", "only the following media types are "
                             "accepted: application/json;stream=watch, "
                             "application/vnd.kubernetes.protobuf;stream=watch")
    assert await _watch(module_api, path, "application/yaml") == (406, not_acceptable)
    assert await _watch(module_api, path, "application/yaml, application/json") == (
        406, not_acceptable)
    assert await _watch(module_api, f"{path}&fieldSelector=data.a%3D1", "application/yaml") == (
        400, failure(400, "BadRequest", '"data.a" is not a known field selector: only '
                     '"metadata.name", "metadata.namespace"'))
    for accept in ("*/*", "application/json"):
        status, body = await _watch(module_api, path, accept)
        assert (status, {e["type"] for e in _stream(body)} <= {"ADDED"}) == (200, True)


async def test_table_include_object_comes_from_the_query_and_is_validated(
        module_api: API, namespace: str) -> None:
    """Rule: a Table's includeObject is TableOptions decoded from the query (a parameter of
    the Accept header is not read); a value other than Metadata, Object, None or empty is
    a 400 worded by ValidateTableOptions behind "Unable to convert to Table as requested".
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/response.go (optionsForTransform),
    k8s.io/apimachinery v0.32.0 pkg/apis/meta/v1/validation/validation.go
    (ValidateTableOptions)."""
    await create_configmap(module_api, "table-include", NS)
    path = f"{NS}/configmaps?fieldSelector=metadata.name%3Dtable-include"
    assert await module_api.get(f"{path}&includeObject=Everything",
                                headers={"Accept": TABLE}) == (400, failure(
        400, "BadRequest", "Unable to convert to Table as requested: includeObject: Invalid "
        "value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty"))
    status, table = await module_api.get(path, headers={"Accept": f"{TABLE};includeObject=None"})
    assert (status, table["rows"][0]["object"]["kind"]) == (200, "PartialObjectMetadata")
    status, table = await module_api.get(f"{path}&includeObject=None", headers={"Accept": TABLE})
    assert (status, table["rows"][0].get("object")) == (200, None)


@pytest.mark.parametrize("rv", ["", "&resourceVersion=0"])
async def test_a_watch_from_now_with_a_continue_token_is_invalid(
        module_api: API, namespace: str, rv: str) -> None:
    """Rule: with the WatchList gate on (1.32), a watch from "" or "0" naming neither
    sendInitialEvents nor resourceVersionMatch is defaulted to sendInitialEvents=true,
    resourceVersionMatch=NotOlderThan before validation, so a continue token beside it is
    refused as resourceVersionMatch with continue. A watch from a resourceVersion is not
    defaulted, and its continue token is ignored.
    Source: k8s.io/apimachinery v0.32.0 pkg/apis/meta/internalversion/defaults.go
    (SetListOptionsDefaults), pkg/apis/meta/internalversion/validation/validation.go
    (validateWatchOptions), k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go."""
    message = "Forbidden: resourceVersionMatch is forbidden when continue is provided"
    assert await _watch(module_api, f"{NS}/configmaps?watch=true&continue=abc&timeoutSeconds=1"
                        f"{rv}", "application/json") == (
        422, failure(422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: '
                     f"resourceVersionMatch: {message}", {
                         "group": "meta.k8s.io", "kind": "ListOptions", "causes": [{
                             "reason": "FieldValueForbidden", "message": message,
                             "field": "resourceVersionMatch"}]}))
    listed_rv = await _list_rv(module_api, f"{NS}/configmaps")
    status, body = await _watch(
        module_api, f"{NS}/configmaps?watch=true&continue=abc&resourceVersion={listed_rv}"
        "&timeoutSeconds=1", "application/json")
    assert (status, _stream(body)) == (200, [])


async def test_table_options_are_read_after_the_storage_answers(module_api: API,
                                                                namespace: str) -> None:
    """Rule: a Table's TableOptions (includeObject) are decoded and validated by
    transformResponseObject, which runs once the read or the write is done: a read's own
    error comes first (404, an invalid continue token's 400), and a write with a bad
    includeObject is done all the same before its 400. A write's Table honours includeObject
    from the query, never from a parameter of the Accept header.
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go (GetResource, ListResource:
    r.Get/r.List, then transformResponseObject), create.go (createHandler: the create, then
    transformResponseObject), response.go (transformResponseObject → optionsForTransform),
    negotiation/negotiate.go (acceptMediaTypeOptions: includeObject is no Accept parameter)."""
    bad = "includeObject=Everything"
    invalid = failure(400, "BadRequest", "Unable to convert to Table as requested: includeObject:"
                      " Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or "
                      "empty")
    table = {"Accept": TABLE}
    status, out = await module_api.get(f"{NS}/configmaps/no-such-map?{bad}", headers=table)
    assert (status, out["reason"]) == (404, "NotFound")
    status, out = await module_api.get(f"{NS}/configmaps?continue=garbage&{bad}", headers=table)
    assert (status, out["message"].startswith("invalid continue token:")) == (400, True), out
    body = {"metadata": {"name": "table-after-write"}}
    assert await module_api.post(f"{NS}/configmaps?{bad}", body, headers=table) == (400, invalid)
    status, out = await module_api.get(f"{NS}/configmaps/table-after-write")
    assert (status, out["metadata"]["name"]) == (200, "table-after-write")
    status, out = await module_api.post(
        f"{NS}/configmaps?includeObject=Object",
        {"metadata": {"name": "table-write-object"}},
        headers={"Accept": f"{TABLE};includeObject=None"})
    assert (status, out["rows"][0]["object"]["kind"]) == (201, "ConfigMap"), out


async def test_a_watch_parses_its_resource_version_before_the_stream_is_negotiated(
        module_api: API, namespace: str) -> None:
    """Rule: a watch's storage is asked first (rw.Watch: an unparsable resourceVersion is the
    watch cache's 500), and only then does serveWatchHandler read the Table options (400) and
    negotiate the stream serializer (YAML's 406).
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go (ListResource: rw.Watch,
    then serveWatchHandler), watch.go (serveWatchHandler: optionsForTransform, then
    NegotiateOutputMediaTypeStream), pkg/storage/cacher/cacher.go (Watch:
    versioner.ParseResourceVersion)."""
    unparsable = failure(500, "", 'resourceVersion: Invalid value: "abc": strconv.ParseUint: '
                         'parsing "abc": invalid syntax')
    del unparsable["reason"]
    path = f"{NS}/configmaps?watch=true&resourceVersion=abc&timeoutSeconds=1"
    assert await _watch(module_api, path, "application/yaml") == (500, unparsable)
    assert await _watch(module_api, f"{path}&includeObject=Everything", TABLE) == (
        500, unparsable)
    status, out = await _watch(module_api, f"{NS}/configmaps?watch=true&timeoutSeconds=1"
                               "&includeObject=Everything&resourceVersion=1", TABLE)
    assert (status, out["reason"]) == (400, "BadRequest"), out


@pytest.mark.parametrize("rv_match", ["", "&resourceVersion={rv}",
                                      "&resourceVersion={rv}&resourceVersionMatch=Exact",
                                      "&resourceVersion={rv}&resourceVersionMatch=NotOlderThan"])
async def test_a_full_page_has_a_continue_token_while_any_object_follows(
        module_api: API, namespace: str, rv_match: str) -> None:
    """Rule: a LIST page that filled its limit carries a continue token whenever any object
    of the listed range follows its last item, whether or not a later one matches the
    selectors; remainingItemCount only without selectors. The watch cache (a read from now
    or NotOlderThan) and etcd (Exact, the legacy exact read of a page) agree on this.
    Source: k8s.io/apiserver v0.32.0 pkg/storage/cacher/cacher.go (GetList:
    ``hasMoreListItems = i < len(objs)-1``), pkg/storage/etcd3/store.go (GetList: the bucket
    full with keys left is ``hasMore``), pkg/storage/continue.go (PrepareContinueToken)."""
    for name, app in (("zz-page-a", "first"), ("zz-page-b", "other"), ("zz-page-c", "last")):
        # (the namespace's last names: made once for every parametrization)
        status, out = await module_api.post(f"{NS}/configmaps", {
            "metadata": {"name": name, "labels": {"app": app}}})
        assert status in (201, 409), out
    rv = await _list_rv(module_api, f"{NS}/configmaps")
    query = rv_match.format(rv=rv)
    status, page = await module_api.get(f"{NS}/configmaps?labelSelector=app%3Dfirst&limit=1"
                                        f"{query}")
    assert status == 200, page
    assert [i["metadata"]["name"] for i in page["items"]] == ["zz-page-a"]
    assert "remainingItemCount" not in page["metadata"]
    token = page["metadata"].get("continue")
    assert token, page["metadata"]
    status, rest = await module_api.get(f"{NS}/configmaps?labelSelector=app%3Dfirst&limit=1"
                                        f"&continue={token}")
    assert (status, rest["items"], rest["metadata"].get("continue")) == (200, [], None), rest
    # the range's last object: nothing follows it
    status, page = await module_api.get(f"{NS}/configmaps?labelSelector=app%3Dlast&limit=1"
                                        f"{query}")
    assert (status, page["metadata"].get("continue")) == (200, None), page


async def test_a_delete_answers_in_the_representation_asked_for(module_api: API,
                                                                namespace: str) -> None:
    """Rule: DELETE and DELETECOLLECTION answer through transformResponseObject like any
    read: the Table options are checked first (a 400 after the deletion is done), a Status
    goes out as it is, an object as the Table or PartialObjectMetadata asked for, a list as
    a Table of its rows.
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/delete.go (DeleteResource,
    DeleteCollection: transformResponseObject), response.go (transformResponseObject,
    doTransformObject: "if _, ok := obj.(*metav1.Status); ok")."""
    table = {"Accept": TABLE}
    for name in ("del-kept", "del-gone"):
        status, out = await module_api.post(f"{NS}/configmaps", {"metadata": {
            "name": name, "labels": {"del": "yes"},
            "finalizers": ["example.com/hold"] if name == "del-kept" else []}})
        assert status == 201, out
    status, out = await module_api.delete(f"{NS}/configmaps/del-kept", headers=table)
    assert (status, out["kind"], [r["cells"][0] for r in out["rows"]]) == (
        200, "Table", ["del-kept"]), out
    status, out = await module_api.delete(f"{NS}/configmaps/del-kept",
                                          headers={"Accept": PARTIAL})
    assert (status, out["kind"], out["metadata"]["name"]) == (
        200, "PartialObjectMetadata", "del-kept"), out
    status, out = await module_api.delete(f"{NS}/configmaps/del-gone?includeObject=Everything",
                                          headers=table)
    assert (status, out["reason"]) == (400, "BadRequest"), out
    assert (await module_api.get(f"{NS}/configmaps/del-gone"))[0] == 404
    status, out = await module_api.delete(f"{NS}/configmaps?labelSelector=del%3Dyes",
                                          headers=table)
    assert (status, out["kind"], [r["cells"][0] for r in out["rows"]]) == (
        200, "Table", ["del-kept"]), out
    status, out = await module_api.patch(f"{NS}/configmaps/del-kept",
                                         {"metadata": {"finalizers": None}},
                                         "application/merge-patch+json")
    assert status == 200, out
