"""Answers in protobuf, as the legacy codecs write them for a built-in kind.

k8s.io/apiserver pkg/endpoints/handlers/negotiation/negotiate.go NegotiateOutputMediaType
picks ``application/vnd.kubernetes.protobuf`` from the codecs' serializers (k8s.io/
apimachinery pkg/runtime/serializer/protobuf: the ``k8s\\x00`` magic and a runtime.Unknown
holding the kind's message) for a GET, a LIST, a write's answer, and — through
responsewriters.ErrorNegotiated — an error's Status; a watch streams protobuf frames. (Not
served in protobuf here: Tables, whose clauses fall through to the next one.)
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.protobuf import decode
from tests.cluster.conftest import API

NS = "default"
PB = "application/vnd.kubernetes.protobuf"


async def _call(api: API, method: str, path: str, accept: str,
                body: dict[str, Any] | None = None) -> tuple[int, str, bytes]:
    async with api.session.request(method, api.cluster.url + path, ssl=api.ssl, json=body,
                                   headers={"Accept": accept}) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


async def test_object_and_list_in_protobuf_hold_what_json_holds(api: API) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "pb-one", "labels": {"a": "b"}}, "data": {"k": "v"}}
    status, ctype, raw = await _call(api, "POST", f"/api/v1/namespaces/{NS}/configmaps", PB, cm)
    assert (status, ctype) == (201, PB)
    created = decode(raw)
    assert raw.startswith(b"k8s\x00")
    status, as_json = await api.get(f"/api/v1/namespaces/{NS}/configmaps/pb-one")
    assert status == 200 and created == as_json
    status, ctype, raw = await _call(api, "GET", f"/api/v1/namespaces/{NS}/configmaps/pb-one",
                                     f"{PB}, application/json")
    assert (status, ctype) == (200, PB) and decode(raw) == as_json
    status, ctype, raw = await _call(api, "GET", f"/api/v1/namespaces/{NS}/configmaps"
                                     "?labelSelector=a%3Db", PB)
    listed = decode(raw)
    assert (status, ctype, listed["kind"]) == (200, PB, "ConfigMapList")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["pb-one"]


async def test_error_status_in_protobuf(api: API) -> None:
    status, ctype, raw = await _call(api, "GET", f"/api/v1/namespaces/{NS}/configmaps/pb-none",
                                     PB)
    assert (status, ctype) == (404, PB)
    got = decode(raw)
    assert (got["kind"], got["reason"], got["code"]) == ("Status", "NotFound", 404)
    assert got["message"] == 'configmaps "pb-none" not found'


async def test_scale_subresource_in_protobuf(api: API) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pb-web"},
                  "spec": {"selector": {"matchLabels": {"app": "pb"}}, "template": {
                      "metadata": {"labels": {"app": "pb"}},
                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    status, _ = await api.post(f"/apis/apps/v1/namespaces/{NS}/deployments", deployment)
    assert status == 201
    status, ctype, raw = await _call(
        api, "GET", f"/apis/apps/v1/namespaces/{NS}/deployments/pb-web/scale", PB)
    scale = decode(raw)
    assert (status, ctype) == (200, PB)
    assert (scale["apiVersion"], scale["kind"], scale["status"]["selector"]) == (
        "autoscaling/v1", "Scale", "app=pb")


async def test_watch_in_protobuf_frames(api: API) -> None:
    """serveWatchHandler's stream serializer for protobuf: LengthDelimitedFramer frames of
    meta/v1 WatchEvent, each object the kind's envelope, Content-Type ``;stream=watch``."""
    from setpoint.machinery.protobuf import decode_watch_events

    status, ctype, raw = await _call(
        api, "GET", f"/api/v1/namespaces/{NS}/configmaps?watch=true&timeoutSeconds=1"
        "&fieldSelector=metadata.name%3Dkube-root-ca.crt", f"{PB}, application/json")
    assert (status, ctype) == (200, f"{PB};stream=watch")
    events, rest = decode_watch_events(raw)
    assert rest == b""
    assert [e["type"] for e in events] == ["ADDED"]
    obj = events[0]["object"]  # (the RawExtension decoded as the envelope it holds)
    assert (obj["kind"], obj["metadata"]["name"]) == ("ConfigMap", "kube-root-ca.crt")


async def test_metadata_only_in_protobuf(api: API) -> None:
    """RequestScope.AllowsMediaTypeTransform lets PartialObjectMetadata(List) be any media
    type (a Table JSON or YAML only): what a client-go metadata informer asks for first."""
    accept = (f"{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
              "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    status, ctype, raw = await _call(api, "GET", f"/api/v1/namespaces/{NS}/configmaps", accept)
    listed = decode(raw)
    assert (status, ctype) == (200, PB)
    assert (listed["apiVersion"], listed["kind"]) == ("meta.k8s.io/v1",
                                                      "PartialObjectMetadataList")
    assert "kube-root-ca.crt" in [i["metadata"]["name"] for i in listed["items"]]
    assert all(set(i) == {"metadata"} for i in listed["items"])
    status, ctype, raw = await _call(
        api, "GET", f"/api/v1/namespaces/{NS}/configmaps/kube-root-ca.crt",
        f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    one = decode(raw)
    assert (status, ctype, one["kind"]) == (200, PB, "PartialObjectMetadata")
    assert one["metadata"]["name"] == "kube-root-ca.crt" and "data" not in one
    # a Table has no protobuf form: that clause is passed over for the next
    status, ctype, _ = await _call(api, "GET", f"/api/v1/namespaces/{NS}/configmaps",
                                   f"{PB};as=Table;g=meta.k8s.io;v=v1, application/json")
    assert (status, ctype) == (200, "application/json")


async def test_reviews_and_discovery_in_protobuf(api: API) -> None:
    """The reviews and ComponentStatus are built-in kinds the legacy codecs encode, and the
    discovery documents too (discovery/legacy.go, aggregated/handler.go: the codecs' every
    serializer); ``/api`` carries an empty apiVersion (stripVersionNegotiatedSerializer),
    which a client's decoder refuses unless it defaults it, as client-go's does with v1."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}
    status, ctype, raw = await _call(
        api, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", PB, review)
    assert (status, ctype) == (201, PB)
    assert decode(raw)["status"] == {"allowed": True}
    status, ctype, raw = await _call(api, "GET", "/api/v1/componentstatuses", PB)
    assert (status, ctype, decode(raw)["kind"]) == (200, PB, "ComponentStatusList")
    status, ctype, raw = await _call(api, "GET", "/apis/apps/v1", PB)
    assert (status, ctype, decode(raw)["groupVersion"]) == (200, PB, "apps/v1")
    status, ctype, raw = await _call(api, "GET", "/api", PB)
    assert (status, ctype) == (200, PB)
    assert decode(raw, api_version="v1")["versions"] == ["v1"]
    aggregated = f"{PB};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    status, ctype, raw = await _call(api, "GET", "/apis", aggregated)
    assert (status, ctype, decode(raw)["kind"]) == (200, aggregated, "APIGroupDiscoveryList")


async def test_audit_logs_the_object_of_a_protobuf_answer() -> None:
    """The audit event logs the response object (``LogResponseObject``), not its encoding:
    a protobuf answer is logged as the object it holds, an error Status as its Status."""
    from setpoint.cluster.endpoints.auditing import _answered_object, _status_of
    from setpoint.cluster.endpoints.http import Response
    from setpoint.machinery.protobuf import encode

    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z"},
          "data": {"k": "v"}}
    assert _answered_object(Response(encode(cm), 200, PB)) == cm
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": 'configmaps "a" not found', "reason": "NotFound",
              "details": {"name": "a", "kind": "configmaps"}, "code": 404}
    assert _status_of(Response(encode(status), 404, PB)) == status
    assert _status_of(Response(b"apiVersion: v1\nkind: Status\ncode: 404\n", 404,
                               "application/yaml")) == {
        "apiVersion": "v1", "kind": "Status", "code": 404}
