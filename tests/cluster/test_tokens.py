"""Service account tokens: issued by serviceaccounts/<name>/token, accepted as bearer tokens."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import aiohttp

from setpoint.cluster import RunningCluster
from setpoint.cluster.authentication.tokens import TokenIssuer
from tests.cluster.conftest import API

SA = "/api/v1/namespaces/default/serviceaccounts"


async def request_token(api: API, name: str = "default",
                        **spec: object) -> tuple[int, dict[str, Any]]:
    return await api.post(f"{SA}/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})


async def get_with(cluster: RunningCluster, api: API, token: str) -> int:
    async with aiohttp.ClientSession() as s, s.get(
            cluster.url + "/api/v1",  # discovery: every authenticated user may read it
            headers={"Authorization": f"Bearer {token}"}, ssl=api.ssl) as resp:
        return resp.status


async def test_a_requested_token_authenticates(cluster: RunningCluster, api: API) -> None:
    await api.post(SA, {"metadata": {"name": "robot"}})
    status, body = await request_token(api, "robot", expirationSeconds=3600)
    assert status == 201, body
    assert body["kind"] == "TokenRequest"
    token = body["status"]["token"]
    assert body["status"]["expirationTimestamp"].endswith("Z")
    assert await get_with(cluster, api, token) == 200
    status, review = await api.post("/apis/authentication.k8s.io/v1/tokenreviews", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token}})
    assert status == 201
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == "system:serviceaccount:default:robot"


async def test_deleting_the_account_revokes_its_tokens(cluster: RunningCluster,
                                                      api: API) -> None:
    await api.post(SA, {"metadata": {"name": "temp"}})
    _, body = await request_token(api, "temp")
    token = body["status"]["token"]
    assert await get_with(cluster, api, token) == 200
    await api.delete(f"{SA}/temp")
    assert await get_with(cluster, api, token) == 401


async def test_forged_tokens_are_refused(cluster: RunningCluster, api: API) -> None:
    _, body = await request_token(api)
    header, payload, _ = body["status"]["token"].split(".")
    assert await get_with(cluster, api, f"{header}.{payload}.AAAA") == 401


async def test_short_expirations_are_invalid(api: API) -> None:
    status, body = await request_token(api, expirationSeconds=10)
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "spec.expirationSeconds"


async def test_token_for_a_missing_account_is_404(api: API) -> None:
    status, body = await request_token(api, "nobody")
    assert status == 404 and body["details"]["kind"] == "serviceaccounts"


def test_tokens_expire_and_need_the_signing_key(tmp_path: Path) -> None:
    issuer = TokenIssuer.load_or_create(tmp_path)
    token, expires = issuer.issue("ns", "sa", "uid-1", audiences=["a"], expiration_seconds=600,
                                  now=time.time() - 1000)
    assert expires < time.time()
    assert issuer.verify(token) is None
    fresh, _ = issuer.issue("ns", "sa", "uid-1", audiences=["a"], expiration_seconds=600)
    claims = issuer.verify(fresh)
    assert claims is not None and claims["sub"] == "system:serviceaccount:ns:sa"
    (tmp_path / "other").mkdir()
    assert TokenIssuer.load_or_create(tmp_path / "other").verify(fresh) is None


def _claims(token: str) -> dict[str, Any]:
    import base64
    import json

    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


async def test_bound_object_kinds(api: API) -> None:
    """pkg/registry/core/serviceaccount/storage/token.go (1.32): a token binds only to a
    Pod, Node or Secret; the object must exist, a pod must run as the account, and a uid in
    the reference must be the object's."""
    await api.post(SA, {"metadata": {"name": "binder"}})
    status, answer = await request_token(api, "binder", boundObjectRef={
        "kind": "ConfigMap", "apiVersion": "v1", "name": "x"})
    assert (status, answer["message"]) == (
        400, "cannot bind token to object of type /v1, Kind=ConfigMap")
    status, answer = await request_token(api, "binder", boundObjectRef={
        "kind": "Pod", "apiVersion": "v1", "name": "gone"})
    assert (status, answer["message"]) == (404, 'pods "gone" not found')
    status, _ = await api.post("/api/v1/namespaces/default/pods", {
        "metadata": {"name": "other-sa"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert status == 201
    status, answer = await request_token(api, "binder", boundObjectRef={
        "kind": "Pod", "apiVersion": "v1", "name": "other-sa"})
    assert (status, answer["message"]) == (400, (
        'cannot bind token for serviceaccount "binder" to pod running with different '
        "serviceaccount name."))
    status, secret = await api.post("/api/v1/namespaces/default/secrets",
                                    {"metadata": {"name": "anchor"}})
    assert status == 201
    status, answer = await request_token(api, "binder", boundObjectRef={
        "kind": "Secret", "apiVersion": "v1", "name": "anchor", "uid": "not-its-uid"})
    assert (status, answer["reason"], answer["message"]) == (409, "Conflict", (
        'Operation cannot be fulfilled on Secret "anchor": the UID in the bound object '
        "reference (not-its-uid) does not match the UID in record. The object might have "
        "been deleted and then recreated"))
    status, answer = await request_token(api, "binder", boundObjectRef={
        "kind": "Secret", "apiVersion": "v1", "name": "anchor"})
    assert status == 201, answer
    claims = _claims(answer["status"]["token"])
    # pkg/serviceaccount/claims.go: the bound object's name and uid, and a unique jti
    assert claims["kubernetes.io"]["secret"] == {
        "name": "anchor", "uid": secret["metadata"]["uid"]}
    assert isinstance(claims["jti"], str) and claims["jti"]


async def test_deleting_the_bound_object_invalidates_the_token(cluster: RunningCluster,
                                                               api: API) -> None:
    """pkg/serviceaccount/claims.go (validator.Validate): a token bound to an object is
    accepted only while that object exists."""
    await api.post(SA, {"metadata": {"name": "holder"}})
    status, _ = await api.post("/api/v1/namespaces/default/secrets",
                               {"metadata": {"name": "holder-anchor"}})
    assert status == 201
    _, body = await request_token(api, "holder", boundObjectRef={
        "kind": "Secret", "apiVersion": "v1", "name": "holder-anchor"})
    token = body["status"]["token"]
    assert await get_with(cluster, api, token) == 200
    status, _ = await api.delete("/api/v1/namespaces/default/secrets/holder-anchor")
    assert status == 200
    assert await get_with(cluster, api, token) == 401


async def test_token_request_metadata(api: API) -> None:
    """token.go: a name in the body must be the account's (422), a namespace the URL's (the
    create handler's 400); the answer is stamped with its creation time."""
    status, answer = await api.post(f"{SA}/default/token", {"metadata": {"name": "other"}})
    assert (status, answer["message"]) == (422, (
        'TokenRequest.authentication.k8s.io "default" is invalid: metadata.name: Invalid '
        'value: "other": must match the service account name if specified'))
    status, answer = await api.post(f"{SA}/default/token",
                                    {"metadata": {"namespace": "kube-system"}})
    assert (status, answer["message"]) == (400, (
        "the namespace of the provided object does not match the namespace sent on the "
        "request"))
    status, answer = await api.post(f"{SA}/default/token", {"metadata": {"name": "default"}})
    assert status == 201, answer
    assert answer["metadata"]["creationTimestamp"].endswith("Z")


async def test_audiences_decide_where_a_token_counts(cluster: RunningCluster, api: API) -> None:
    """pkg/serviceaccount/jwt.go: a token counts only for an audience it names: the API's
    own for requests, the TokenReview's spec.audiences (else the API's) for a review,
    whose status lists the audiences the token was accepted for."""
    await api.post(SA, {"metadata": {"name": "elsewhere"}})
    _, body = await request_token(api, "elsewhere", audiences=["vault"])
    token = body["status"]["token"]
    assert await get_with(cluster, api, token) == 401
    reviews = "/apis/authentication.k8s.io/v1/tokenreviews"
    status, review = await api.post(reviews, {"spec": {"token": token}})
    assert status == 201
    assert review["status"] == {
        "authenticated": False, "user": {},
        "error": 'token audiences ["vault"] is invalid for the target audiences '
                 '["https://kubernetes.default.svc.cluster.local"]'}
    status, review = await api.post(reviews, {"spec": {"token": token,
                                                       "audiences": ["vault", "other"]}})
    assert status == 201
    assert review["status"]["authenticated"] is True
    assert review["status"]["audiences"] == ["vault"]


async def test_a_pod_bound_token_carries_its_pod_in_user_extra(cluster: RunningCluster,
                                                               api: API) -> None:
    """pkg/serviceaccount/util.go (UserInfo): a pod-bound token authenticates with the pod's
    name and uid, its node's name, and the token's jti as credential-id in user.extra."""
    await api.post(SA, {"metadata": {"name": "runner"}})
    status, pod = await api.post("/api/v1/namespaces/default/pods", {
        "metadata": {"name": "bound-pod"},
        "spec": {"serviceAccountName": "runner", "nodeName": "node-x",
                 "containers": [{"name": "c", "image": "i"}]}})
    assert status == 201, pod
    status, body = await request_token(api, "runner", boundObjectRef={
        "kind": "Pod", "apiVersion": "v1", "name": "bound-pod"})
    assert status == 201, body
    token = body["status"]["token"]
    claims = _claims(token)
    # the node does not exist: it is named without a uid (token.go)
    assert claims["kubernetes.io"]["node"] == {"name": "node-x"}
    async with aiohttp.ClientSession() as s, s.post(
            cluster.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            headers={"Authorization": f"Bearer {token}"}, ssl=api.ssl) as resp:
        assert resp.status == 201
        review = await resp.json()
    prefix = "authentication.kubernetes.io/"
    assert review["status"]["userInfo"]["extra"] == {
        f"{prefix}pod-name": ["bound-pod"], f"{prefix}pod-uid": [pod["metadata"]["uid"]],
        f"{prefix}credential-id": [f"JTI={claims['jti']}"], f"{prefix}node-name": ["node-x"]}
    assert review["status"]["userInfo"]["username"] == "system:serviceaccount:default:runner"


async def test_the_kubelets_pod_bound_request_is_extended(api: API) -> None:
    """pkg/registry/core/serviceaccount/storage/token.go (extendExpiration, on by default):
    a pod-bound request for 3607 s for the API's audience gets a token valid for a year that
    carries ``warnafter``; the answer still reports the 3607 s it was asked for."""
    from datetime import datetime

    await api.post(SA, {"metadata": {"name": "kubelet-like"}})
    status, _ = await api.post("/api/v1/namespaces/default/pods", {
        "metadata": {"name": "extended-pod"},
        "spec": {"serviceAccountName": "kubelet-like",
                 "containers": [{"name": "c", "image": "i"}]}})
    assert status == 201
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "extended-pod"}
    status, body = await request_token(api, "kubelet-like", expirationSeconds=3607,
                                       boundObjectRef=ref)
    assert status == 201, body
    claims = _claims(body["status"]["token"])
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    assert claims["kubernetes.io"]["warnafter"] == claims["iat"] + 3607
    stamp = datetime.fromisoformat(body["status"]["expirationTimestamp"].replace("Z", "+00:00"))
    assert int(stamp.timestamp()) == claims["iat"] + 3607
    # other lifetimes, or a token without a pod, are not extended
    status, body = await request_token(api, "kubelet-like", expirationSeconds=3600,
                                       boundObjectRef=ref)
    assert "warnafter" not in _claims(body["status"]["token"])["kubernetes.io"]
    status, body = await request_token(api, "kubelet-like", expirationSeconds=3607)
    claims = _claims(body["status"]["token"])
    assert claims["exp"] - claims["iat"] == 3607


SECRETS = "/api/v1/namespaces/default/secrets"


async def test_token_secrets_are_filled_and_their_tokens_authenticate(
        cluster: RunningCluster, api: API) -> None:
    """pkg/controller/serviceaccount/tokens_controller.go: a service-account-token Secret of
    an existing account gets token, ca.crt, namespace and the account's uid annotation; the
    legacy token (pkg/serviceaccount/legacy.go) authenticates while its Secret holds it."""
    import base64

    from tests.waiting import wait_for

    status, account = await api.post(SA, {"metadata": {"name": "legacy"}})
    assert status == 201
    status, _ = await api.post(SECRETS, {
        "metadata": {"name": "legacy-token",
                     "annotations": {"kubernetes.io/service-account.name": "legacy"}},
        "type": "kubernetes.io/service-account-token"})
    assert status == 201

    async def filled() -> dict[str, Any] | None:
        _, secret = await api.get(f"{SECRETS}/legacy-token")
        return secret if "token" in (secret.get("data") or {}) else None

    secret = await wait_for(filled)
    assert sorted(secret["data"]) == ["ca.crt", "namespace", "token"]
    assert base64.b64decode(secret["data"]["namespace"]) == b"default"
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == \
        account["metadata"]["uid"]
    token = base64.b64decode(secret["data"]["token"]).decode()
    claims = _claims(token)
    assert claims["iss"] == "kubernetes/serviceaccount"
    assert claims["kubernetes.io/serviceaccount/secret.name"] == "legacy-token"
    assert "exp" not in claims
    assert await get_with(cluster, api, token) == 200
    status, _ = await api.delete(f"{SECRETS}/legacy-token")
    assert status == 200
    assert await get_with(cluster, api, token) == 401


async def test_token_secrets_without_their_account_are_deleted(api: API) -> None:
    """tokens_controller.go: a token Secret naming no existing account is deleted, and an
    account's token Secrets go when the account does."""
    from tests.waiting import wait_for

    async def gone(name: str) -> bool:
        status, _ = await api.get(f"{SECRETS}/{name}")
        return status == 404

    status, _ = await api.post(SECRETS, {
        "metadata": {"name": "orphan-token",
                     "annotations": {"kubernetes.io/service-account.name": "nobody"}},
        "type": "kubernetes.io/service-account-token"})
    assert status == 201
    assert await wait_for(lambda: gone("orphan-token"))
    await api.post(SA, {"metadata": {"name": "shortlived"}})
    status, _ = await api.post(SECRETS, {
        "metadata": {"name": "shortlived-token",
                     "annotations": {"kubernetes.io/service-account.name": "shortlived"}},
        "type": "kubernetes.io/service-account-token"})
    assert status == 201
    status, _ = await api.delete(f"{SA}/shortlived")
    assert status == 200
    assert await wait_for(lambda: gone("shortlived-token"))
