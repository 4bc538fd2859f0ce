"""DELETECOLLECTION: what it checks in which order, what it lists, what it answers.

kube-apiserver 1.32:
- k8s.io/apiserver pkg/endpoints/handlers/delete.go DeleteCollection: the ListOptions are
  decoded (400), validated (422 ListOptions.meta.k8s.io), their field labels converted
  (ConvertFieldLabel, 400) before the body is read and the DeleteOptions decoded and
  validated (422 DeleteOptions.meta.k8s.io); the store's result is the answer, 200.
- pkg/registry/generic/registry/store.go DeleteCollection: with no limit in the request it
  lists with ``deleteCollectionPageSize`` (10000) and follows the continue tokens, answering
  the first page's list holding every item listed (as read, before the deletions); with a
  limit it lists and deletes that one page and answers it, its continue token included.
  Each item goes through e.Delete (admission, dryRun).
- pkg/storage/cacher/cacher.go shouldDelegateList: the page size makes a resourceVersion
  without a match the legacy exact read, handed to etcd (etcd3/store.go resolveGetListRev):
  the collection as it was at that revision, etcd's future-revision 500 for one not reached
  (no wait in the watch cache), "invalid resource version" 400 for one that does not parse.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
CMS = f"{NS}/configmaps"


async def _configmaps(api: API, group: str, count: int) -> list[dict[str, Any]]:
    made = []
    for i in range(count):
        status, out = await api.post(CMS, {"metadata": {"name": f"{group}-{i}",
                                                        "labels": {"group": group}}})
        assert status == 201, out
        made.append(out)
    return made


async def _names(api: API, group: str) -> list[str]:
    status, listed = await api.get(f"{CMS}?labelSelector=group%3D{group}")
    assert status == 200
    return [item["metadata"]["name"] for item in listed["items"]]


async def test_the_answer_is_the_list_of_the_deleted_objects(module_api: API) -> None:
    """A ConfigMapList of what the selectors chose, each item as it was read; dryRun answers
    the same list and deletes nothing."""
    made = await _configmaps(module_api, "answer", 3)
    query = "labelSelector=group%3Danswer&fieldSelector=metadata.name%21%3Danswer-1"
    status, dry = await module_api.delete(f"{CMS}?{query}&dryRun=All")
    assert status == 200, dry
    assert (dry["kind"], dry["apiVersion"]) == ("ConfigMapList", "v1")
    assert [item["metadata"] for item in dry["items"]] == [made[0]["metadata"],
                                                           made[2]["metadata"]]
    assert await _names(module_api, "answer") == ["answer-0", "answer-1", "answer-2"]
    status, done = await module_api.delete(f"{CMS}?{query}")
    assert status == 200
    assert done["items"] == dry["items"]
    assert "continue" not in done["metadata"]
    assert await _names(module_api, "answer") == ["answer-1"]


async def test_a_limit_deletes_one_page_and_answers_its_continue_token(module_api: API) -> None:
    """store.go DeleteCollection: "If the original request was setting the limit, finish
    after running it"."""
    await _configmaps(module_api, "paged", 3)
    status, page = await module_api.delete(f"{CMS}?labelSelector=group%3Dpaged&limit=2")
    assert status == 200
    assert [item["metadata"]["name"] for item in page["items"]] == ["paged-0", "paged-1"]
    assert page["metadata"]["continue"]
    # (etcd3 GetList counts the remaining items only for a list without selectors)
    assert "remainingItemCount" not in page["metadata"]
    assert await _names(module_api, "paged") == ["paged-2"]


async def test_a_resource_version_is_the_exact_read_of_the_past(module_api: API) -> None:
    """The page size makes ?resourceVersion=N the legacy exact read: what existed at N is
    deleted and answered at N; an object written after N is left."""
    first = await _configmaps(module_api, "past", 2)
    at = first[-1]["metadata"]["resourceVersion"]
    await _configmaps(module_api, "past-later", 1)
    status, later = await module_api.post(CMS, {"metadata": {
        "name": "past-2", "labels": {"group": "past"}}})
    assert status == 201, later
    status, done = await module_api.delete(f"{CMS}?labelSelector=group%3Dpast&"
                                           f"resourceVersion={at}")
    assert status == 200, done
    assert done["metadata"]["resourceVersion"] == at
    assert [item["metadata"]["name"] for item in done["items"]] == ["past-0", "past-1"]
    assert await _names(module_api, "past") == ["past-2"]


async def test_a_future_resource_version_is_etcds_500_without_a_wait(module_api: API) -> None:
    """The exact read of a revision etcd has not reached: mvcc's ErrFutureRev, which
    etcd3's interpretListError passes through (a 500, no reason); nothing is deleted."""
    made = await _configmaps(module_api, "future", 1)
    wanted = int(made[0]["metadata"]["resourceVersion"]) + 1000
    status, out = await module_api.delete(f"{CMS}?labelSelector=group%3Dfuture&"
                                          f"resourceVersion={wanted}")
    assert (status, out) == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "etcdserver: mvcc: required revision is a future revision", "code": 500})
    assert await _names(module_api, "future") == ["future-0"]


async def test_an_unparsable_resource_version_is_etcds_400(module_api: API) -> None:
    """etcd3/store.go resolveGetListRev wraps ParseResourceVersion's error in a BadRequest
    (a LIST's plain ?resourceVersion=abc is the watch cache's 500 instead)."""
    status, out = await module_api.delete(f"{CMS}?labelSelector=group%3Dnone&"
                                          "resourceVersion=abc")
    assert (status, out) == (400, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'invalid resource version: resourceVersion: Invalid value: "abc": '
                   'strconv.ParseUint: parsing "abc": invalid syntax',
        "reason": "BadRequest", "code": 400})


async def test_the_list_options_are_checked_before_the_body(module_api: API) -> None:
    """handlers/delete.go: ListOptions validation, then the field label conversion, both
    before the body is decoded or its DeleteOptions validated."""
    status, out = await module_api.delete(f"{CMS}?resourceVersionMatch=Exact",
                                          {"propagationPolicy": "Bogus"})
    assert status == 422
    assert (out["details"]["kind"], out["details"]["causes"][0]["field"]) == (
        "ListOptions", "resourceVersionMatch")
    status, out = await module_api.delete(f"{CMS}?fieldSelector=spec.nope%3Dx",
                                          raw=b"{not json")
    assert (status, out) == (400, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        # a ConfigMap has k8s.io/apimachinery's DefaultMetaV1FieldSelectorConversion
        "message": '"spec.nope" is not a known field selector: only "metadata.name", '
                   '"metadata.namespace"', "reason": "BadRequest", "code": 400})
    status, out = await module_api.delete(f"{CMS}?labelSelector=group%3Dnone",
                                          {"propagationPolicy": "Bogus"})
    assert (status, out["details"]["kind"]) == (422, "DeleteOptions")


async def test_list_options_are_defaulted_before_they_are_validated(module_api: API) -> None:
    """Rule: DeleteCollection defaults its ListOptions as a LIST or WATCH does before
    validating them: with ``watch`` and no resourceVersion (or "0"), sendInitialEvents and
    resourceVersionMatch=NotOlderThan are set, so a continue token beside them is the
    watch validation's 422 and nothing is deleted; without a continue token the options pass.
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/delete.go (DeleteCollection:
    SetListOptionsDefaults, then ValidateListOptions), k8s.io/apimachinery v0.32.0
    pkg/apis/meta/internalversion/defaults.go, validation/validation.go
    (validateWatchOptions)."""
    await _configmaps(module_api, "defaulted", 2)
    status, page = await module_api.get(f"{CMS}?labelSelector=group%3Ddefaulted&limit=1")
    assert status == 200, page
    token = page["metadata"]["continue"]
    status, out = await module_api.delete(
        f"{CMS}?labelSelector=group%3Ddefaulted&watch=true&continue={token}")
    assert (status, out.get("reason"), [(c["reason"], c["field"]) for c in
                                        out.get("details", {}).get("causes", [])]) == (
        422, "Invalid", [("FieldValueForbidden", "resourceVersionMatch")]), out
    assert out["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                              "Forbidden: resourceVersionMatch is forbidden when continue is "
                              "provided")
    assert await _names(module_api, "defaulted") == ["defaulted-0", "defaulted-1"]
    status, out = await module_api.delete(f"{CMS}?labelSelector=group%3Ddefaulted&watch=true")
    assert (status, [i["metadata"]["name"] for i in out["items"]]) == (
        200, ["defaulted-0", "defaulted-1"]), out
    assert await _names(module_api, "defaulted") == []
