"""LIST continue tokens the server did not hand out as they are: forged, damaged, expired.

Sources (kubernetes/apiserver v0.32, pkg/storage/...):
- continue.go DecodeContinue (ErrInvalidStartRV, ErrEmptyStartKey, ErrGenericInvalidKey,
  ErrUnrecognizedEncodedVersion; base64.RawURLEncoding; path.Clean of the start key)
- etcd3/store.go GetList ("invalid continue token: %v", a 400), resolveGetListRev (a
  token's revision below 0 means the latest; "specifying resource version is not allowed
  when using continue")
- etcd3/errors.go interpretListError, handleCompactedErrorForPaging (a 410 whose Status
  carries a token with revision -1)
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio

CMS = "/api/v1/namespaces/default/configmaps"


def _token(doc: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(doc)).decode().rstrip("=")


def _bad_request(message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"invalid continue token: continue key is not valid{message}",
            "reason": "BadRequest", "code": 400}


async def _names(api: API, query: str) -> tuple[int, Any]:
    status, body = await api.get(f"{CMS}?{query}")
    if status != 200:
        return status, body
    return status, [i["metadata"]["name"] for i in body["items"]]


async def _three(api: API) -> int:
    for name in ("a", "b", "c"):
        status, obj = await api.post(CMS, {"metadata": {"name": name}})
        assert status == 201, obj
    return int(obj["metadata"]["resourceVersion"])


async def test_unreadable_tokens_are_bad_requests(api: API) -> None:
    """Each way DecodeContinue refuses a token, worded as the etcd3 store wraps it."""
    rv = await _three(api)
    v1 = "meta.k8s.io/v1"
    cases = {
        "x": ": illegal base64 data at input byte 0",
        "eyJ2Ijoi=": ": illegal base64 data at input byte 8",  # no padding in RawURLEncoding
        _token({"v": v1, "rv": 0, "start": "a\x00"}):
            ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        _token({"v": v1, "rv": rv}):
            ": encoded start key empty (version meta.k8s.io/v1)",
        _token({"v": "meta.k8s.io/v2", "rv": rv, "start": "a"}):
            ": server does not recognize this encoded version meta.k8s.io/v2",
        _token({"v": v1, "rv": rv, "start": "../kube-system/x"}): ": ../kube-system/x",
        _token({"v": v1, "rv": "5", "start": "a"}):
            ": json: cannot unmarshal string into Go struct field continueToken.rv of type "
            "int64",
        _token([1]): ": json: cannot unmarshal array into Go value of type "
                     "storage.continueToken",
    }
    for token, message in cases.items():
        status, body = await api.get(f"{CMS}?limit=1&continue={token}")
        assert (status, body) == (400, _bad_request(message)), token


async def test_token_start_key_and_revision(api: API) -> None:
    """The start key is where the page begins (etcd ranges from it, the key itself
    included); JSON field names match without regard to case; a revision below 0 lists at
    the latest revision; one not reached yet is etcd's ErrFutureRev, a 500 without reason."""
    rv = await _three(api)
    status, names = await _names(api, "limit=5&continue=" + _token(
        {"v": "meta.k8s.io/v1", "rv": rv, "start": "b"}))
    assert (status, names) == (200, ["b", "c", "kube-root-ca.crt"])
    status, names = await _names(api, "limit=5&continue=" + _token(
        {"V": "meta.k8s.io/v1", "RV": rv, "Start": "b\x00"}))
    assert (status, names) == (200, ["c", "kube-root-ca.crt"])
    status, listed = await api.get(f"{CMS}?limit=1&continue=" + _token(
        {"v": "meta.k8s.io/v1", "rv": -1, "start": "b\x00"}))
    assert status == 200
    assert [i["metadata"]["name"] for i in listed["items"]] == ["c"]
    assert listed["metadata"]["resourceVersion"] == str(rv)
    status, body = await api.get(f"{CMS}?limit=1&continue=" + _token(
        {"v": "meta.k8s.io/v1", "rv": rv + 1000, "start": "b\x00"}))
    assert (status, body) == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "etcdserver: mvcc: required revision is a future revision", "code": 500})


async def test_compacted_continuation_offers_a_token_at_the_latest_revision(api: API) -> None:
    """A continuation whose revision was compacted (the server compacts its history when it
    starts) is a 410 whose Status carries a token resuming at the same key, revision -1;
    that token lists the rest at the latest revision."""
    await _three(api)
    status, body = await api.get(f"{CMS}?limit=1&continue=" + _token(
        {"v": "meta.k8s.io/v1", "rv": 1, "start": "a\x00"}))
    assert status == 410 and body["reason"] == "Expired"
    assert body["message"].endswith("objects that were created, modified, or deleted between "
                                    "the time the first chunk was returned and now may show "
                                    "up in the list.")
    resume = body["metadata"]["continue"]
    assert orjson.loads(base64.urlsafe_b64decode(resume + "=" * (-len(resume) % 4))) == {
        "v": "meta.k8s.io/v1", "rv": -1, "start": "a\x00"}
    status, names = await _names(api, f"continue={resume}")
    assert (status, names) == (200, ["b", "c", "kube-root-ca.crt"])
