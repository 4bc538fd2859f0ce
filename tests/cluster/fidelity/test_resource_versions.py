"""resourceVersion on GET and LIST, and the revisions each kind of write consumes.

Sources (kubernetes/kubernetes, release 1.32, staging/src/k8s.io/...):
- apimachinery/pkg/apis/meta/internalversion/validation/validation.go ValidateListOptions
- apiserver/pkg/storage/cacher/cacher.go (shouldDelegateList, computeListLimit, Get, GetList)
- apiserver/pkg/storage/cacher/watch_cache.go waitUntilFreshAndBlock
- apiserver/pkg/storage/errors.go NewTooLargeResourceVersionError
- apiserver/pkg/storage/api_object_versioner.go ParseResourceVersion
- apiserver/pkg/storage/etcd3/store.go resolveGetListRev, GetList; etcd3/errors.go

Reads at a revision not reached yet (the watch cache's wait): test_resource_version_freshness.py
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio

CMS = "/api/v1/namespaces/default/configmaps"


def _invalid_list_options(*causes: tuple[str, str]) -> dict[str, Any]:
    parts = [f"resourceVersionMatch: {message}" for _, message in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'ListOptions.meta.k8s.io "" is invalid: {summary}',
        "reason": "Invalid",
        "details": {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
            {"reason": reason, "message": message, "field": "resourceVersionMatch"}
            for reason, message in causes]},
        "code": 422,
    }


async def _rv(api: API) -> int:
    status, listed = await api.get("/api/v1/namespaces")
    assert status == 200
    return int(listed["metadata"]["resourceVersion"])


async def _cm(api: API, name: str, **meta: Any) -> dict[str, Any]:
    status, obj = await api.post(CMS, {"metadata": {"name": name, **meta}, "data": {"a": "1"}})
    assert status == 201, obj
    assert isinstance(obj, dict)
    return obj


async def test_match_without_resource_version_is_forbidden(api: API) -> None:
    """ValidateListOptions: resourceVersionMatch is forbidden unless resourceVersion is
    provided, and an unknown value is NotSupported, both reported (validation.go)."""
    status, body = await api.get(f"{CMS}?resourceVersionMatch=Latest")
    assert status == 422
    assert body == _invalid_list_options(
        ("FieldValueForbidden",
         "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"),
        ("FieldValueNotSupported",
         'Unsupported value: "Latest": supported values: "Exact", "NotOlderThan", ""'))


async def test_exact_with_zero_is_forbidden(api: API) -> None:
    """ValidateListOptions: resourceVersionMatch=Exact with resourceVersion "0" (validation.go;
    the message says "exact" in lower case)."""
    status, body = await api.get(f"{CMS}?resourceVersionMatch=Exact&resourceVersion=0")
    assert status == 422
    assert body == _invalid_list_options((
        "FieldValueForbidden",
        'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))


async def test_match_with_continue_is_forbidden(api: API) -> None:
    """ValidateListOptions: a match with a continue token is forbidden, before the token is
    even read (validation.go runs in the handler, handlers/get.go ListResource)."""
    status, body = await api.get(
        f"{CMS}?resourceVersionMatch=NotOlderThan&resourceVersion=1&continue=abc")
    assert status == 422
    assert body == _invalid_list_options((
        "FieldValueForbidden",
        "Forbidden: resourceVersionMatch is forbidden when continue is provided"))


async def test_continue_with_resource_version_is_a_bad_request(api: API) -> None:
    """etcd3 store.go resolveGetListRev: a continued list may not name a resourceVersion
    (other than "0")."""
    for name in ("a", "b"):
        await _cm(api, name)
    status, page = await api.get(f"{CMS}?limit=1")
    assert status == 200 and page["metadata"]["continue"]
    token = page["metadata"]["continue"]
    status, body = await api.get(f"{CMS}?limit=1&continue={token}&resourceVersion=5")
    assert (status, body) == (400, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "specifying resource version is not allowed when using continue",
        "reason": "BadRequest", "code": 400})
    status, rest = await api.get(f"{CMS}?limit=1&continue={token}&resourceVersion=0")
    assert status == 200 and rest["metadata"]["resourceVersion"] == \
        page["metadata"]["resourceVersion"]


async def test_watch_match_needs_send_initial_events(api: API) -> None:
    """validateWatchOptions: on a watch a match needs sendInitialEvents and may only be
    NotOlderThan (validation.go; WatchList is on by default in 1.32)."""
    status, body = await api.get(f"{CMS}?watch=1&resourceVersionMatch=Exact&resourceVersion=1")
    assert status == 422
    assert body == _invalid_list_options(
        ("FieldValueForbidden", "Forbidden: resourceVersionMatch is forbidden for watch "
                                "unless sendInitialEvents is provided"),
        ("FieldValueNotSupported", 'Unsupported value: "Exact": supported values: '
                                   '"NotOlderThan"'))
    status, body = await api.get(f"{CMS}?watch=1&sendInitialEvents=true")
    assert status == 422
    assert body == _invalid_list_options((
        "FieldValueForbidden",
        "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))


async def test_exact_future_revision_is_etcds_error(api: API) -> None:
    """Exact is delegated to etcd (cacher.go shouldDelegateList), which refuses a future
    revision with mvcc's ErrFutureRev; etcd3/errors.go interpretListError passes it through,
    so it is a 500 without a reason."""
    wanted = await _rv(api) + 1000
    status, body = await api.get(f"{CMS}?resourceVersion={wanted}&resourceVersionMatch=Exact")
    assert (status, body) == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "etcdserver: mvcc: required revision is a future revision", "code": 500})


async def test_non_numeric_resource_version(api: API) -> None:
    """ParseResourceVersion's InvalidError (api_object_versioner.go): the watch cache returns
    it as is, a 500 with no reason (GET, LIST); etcd3's resolveGetListRev wraps it in a 400
    (a LIST with Exact or the legacy exact page)."""
    detail = 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": ' \
             'invalid syntax'
    for path in (f"{CMS}?resourceVersion=abc", "/api/v1/namespaces/default?resourceVersion=abc"):
        status, body = await api.get(path)
        assert (status, body) == (500, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": detail, "code": 500}), path
    for query in ("resourceVersion=abc&resourceVersionMatch=Exact", "resourceVersion=abc&limit=1"):
        status, body = await api.get(f"{CMS}?{query}")
        assert (status, body) == (400, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"invalid resource version: {detail}", "reason": "BadRequest",
            "code": 400}), query
    status, body = await api.get(f"{CMS}?resourceVersion=99999999999999999999")
    assert status == 500
    assert body["message"] == ('resourceVersion: Invalid value: "99999999999999999999": '
                               'strconv.ParseUint: parsing "99999999999999999999": value out '
                               'of range')


async def test_get_resource_version_semantics(api: API) -> None:
    """GET: "" reads etcd, "0" any cached version, a number at least that fresh: all answer
    the current object once it is reached (cacher.go Get)."""
    old = await _cm(api, "g")
    status, new = await api.put(f"{CMS}/g", {**old, "data": {"a": "2"}})
    assert status == 200
    for rv in ("", "0", old["metadata"]["resourceVersion"]):
        status, got = await api.get(f"{CMS}/g?resourceVersion={rv}")
        assert status == 200
        assert got["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]


async def test_list_exact_and_legacy_page_read_the_past(api: API) -> None:
    """Exact lists at that revision; so does a page (limit) with a resourceVersion and no
    match, the legacy exact read (etcd3 resolveGetListRev); NotOlderThan and a plain
    resourceVersion answer the current list (the watch cache)."""
    first = await _cm(api, "p1")
    at = first["metadata"]["resourceVersion"]
    await _cm(api, "p2")
    for query in (f"resourceVersion={at}&resourceVersionMatch=Exact",
                  f"resourceVersion={at}&limit=10"):
        status, listed = await api.get(f"{CMS}?{query}")
        assert status == 200
        assert listed["metadata"]["resourceVersion"] == at, query
        assert [i["metadata"]["name"] for i in listed["items"]
                if i["metadata"]["name"].startswith("p")] == ["p1"], query
    for query in (f"resourceVersion={at}&resourceVersionMatch=NotOlderThan",
                  f"resourceVersion={at}"):
        status, listed = await api.get(f"{CMS}?{query}")
        assert [i["metadata"]["name"] for i in listed["items"]
                if i["metadata"]["name"].startswith("p")] == ["p1", "p2"], query


async def test_limit_is_ignored_at_resource_version_zero(api: API) -> None:
    """The watch cache ignores the limit of a LIST at resourceVersion "0" (cacher.go
    computeListLimit): every item, no continue token."""
    for name in ("z1", "z2", "z3"):
        await _cm(api, name)
    status, listed = await api.get(f"{CMS}?resourceVersion=0&limit=1")
    assert status == 200
    assert "continue" not in listed["metadata"]
    assert len(listed["items"]) >= 3


async def test_each_write_consumes_one_revision(api: API) -> None:
    """One etcd transaction per write, one revision each (etcd3 store.go Create,
    GuaranteedUpdate, Delete): create, update, patch and delete advance the revision by one; a
    no-op update writes nothing (GuaranteedUpdate skips an unchanged object); a delete that
    only sets deletionTimestamp (finalizers) is one update; removing the last finalizer of a
    deleted object is one delete; a deletecollection is one delete per item."""
    before = await _rv(api)
    obj = await _cm(api, "w")
    assert int(obj["metadata"]["resourceVersion"]) == before + 1
    status, updated = await api.put(f"{CMS}/w", {**obj, "data": {"a": "2"}})
    assert int(updated["metadata"]["resourceVersion"]) == before + 2
    status, same = await api.put(f"{CMS}/w", updated)
    assert status == 200 and same["metadata"]["resourceVersion"] == \
        updated["metadata"]["resourceVersion"]
    status, patched = await api.patch(f"{CMS}/w", {"data": {"a": "3"}},
                                      "application/merge-patch+json")
    assert int(patched["metadata"]["resourceVersion"]) == before + 3
    status, _ = await api.delete(f"{CMS}/w")
    assert status == 200 and await _rv(api) == before + 4

    held = await _cm(api, "held", finalizers=["example.com/hold"])
    assert int(held["metadata"]["resourceVersion"]) == before + 5
    status, marked = await api.delete(f"{CMS}/held")
    assert status == 200 and int(marked["metadata"]["resourceVersion"]) == before + 6
    status, _ = await api.patch(f"{CMS}/held", {"metadata": {"finalizers": None}},
                                "application/merge-patch+json")
    assert status == 200 and await _rv(api) == before + 7

    for name in ("dc1", "dc2", "dc3"):
        await _cm(api, name, labels={"set": "dc"})
    status, _ = await api.delete(f"{CMS}?labelSelector=set%3Ddc")
    assert status == 200 and await _rv(api) == before + 7 + 3 + 3


async def test_watch_at_a_resource_version_that_parses_to_zero(api: API) -> None:
    """cacher.go Watch and watch_cache.go getAllEventsSinceLocked decide on the parsed
    resourceVersion: "00" is 0, so the watch starts with the current state as "0" does (not
    a 410 for a revision before the history)."""
    await _cm(api, "zero")
    url = f"{api.cluster.url}{CMS}?watch=1&resourceVersion=00&timeoutSeconds=5"
    async with api.session.get(url, ssl=api.ssl) as resp:
        assert resp.status == 200
        first = orjson.loads(await asyncio.wait_for(resp.content.readline(), 10))
    assert first["type"] == "ADDED"
