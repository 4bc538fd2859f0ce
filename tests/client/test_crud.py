"""CRUD, patch, apply, delete, list and subresources against the fake API server over TLS."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field

from setpoint.client import (
    GVR,
    AlreadyExistsError,
    Client,
    ConflictError,
    Kind,
    NotFoundError,
    PatchType,
    PropagationPolicy,
    ResourceInfo,
    UnknownResourceError,
)
from tests.client.conftest import Recorder
from tests.client.fakeapi import FakeApi

CM = Kind("v1", "ConfigMap")
WIDGETS = Kind("example.com/v1", "Widget")


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_create_then_get_round_trips_in_the_contexts_namespace(
    client: Client, api: FakeApi,
) -> None:
    created = await client.create(configmap("a", k="v"))
    assert created["metadata"]["namespace"] == "team-a"
    assert created["metadata"]["resourceVersion"]
    got = await client.get(CM, "a")
    assert got["data"] == {"k": "v"}
    post = api.requests_to("POST", "/api/v1/namespaces/team-a/configmaps")[0]
    assert post.headers["Authorization"] == "Bearer s3cret"
    assert post.headers["Content-Type"] == "application/json"
    assert post.query["fieldManager"] == "setpoint"


async def test_explicit_namespace_wins_over_the_objects_and_the_default(
    client: Client, api: FakeApi,
) -> None:
    obj = configmap("b")
    obj["metadata"]["namespace"] = "from-object"
    await client.create(obj)
    await client.create(configmap("c"), namespace="explicit")
    assert api.requests_to("POST", "/api/v1/namespaces/from-object/configmaps")
    assert api.requests_to("POST", "/api/v1/namespaces/explicit/configmaps")


async def test_missing_object_raises_not_found_with_the_servers_status(client: Client) -> None:
    with pytest.raises(NotFoundError) as info:
        await client.get(CM, "nope")
    assert info.value.code == 404
    assert info.value.name == "nope"
    assert info.value.status["message"] == 'configmaps "nope" not found'


async def test_create_of_an_existing_name_raises_already_exists(client: Client) -> None:
    await client.create(configmap("dup"))
    with pytest.raises(AlreadyExistsError) as info:
        await client.create(configmap("dup"))
    assert info.value.reason == "AlreadyExists"


async def test_update_with_a_stale_resource_version_raises_conflict(client: Client) -> None:
    first = await client.create(configmap("u", v="1"))
    first["data"] = {"v": "2"}
    updated = await client.update(first)
    assert updated["data"] == {"v": "2"}
    first["data"] = {"v": "3"}  # still carries the first resourceVersion
    with pytest.raises(ConflictError) as info:
        await client.update(first)
    assert "the object has been modified" in info.value.message


@pytest.mark.parametrize(
    ("patch_type", "patch"),
    [
        (PatchType.MERGE, {"data": {"k": "patched"}}),
        (PatchType.STRATEGIC, {"data": {"k": "patched"}}),
        (PatchType.JSON, [{"op": "replace", "path": "/data/k", "value": "patched"}]),
    ],
)
async def test_patch_sends_the_content_type_of_its_patch_type(
    client: Client, api: FakeApi, patch_type: PatchType, patch: Any,
) -> None:
    await client.create(configmap("p", k="v"))
    result = await client.patch(CM, "p", patch, patch_type=patch_type)
    assert result["data"] == {"k": "patched"}
    sent = api.requests_to("PATCH", "/api/v1/namespaces/team-a/configmaps/p")[0]
    assert sent.headers["Content-Type"] == patch_type.value


async def test_apply_sends_field_manager_and_force(client: Client, api: FakeApi) -> None:
    applied = await client.apply(configmap("ssa", k="v"), field_manager="ctrl", force=True)
    assert applied["data"] == {"k": "v"}
    sent = api.requests_to("PATCH", "/api/v1/namespaces/team-a/configmaps/ssa")[0]
    assert sent.headers["Content-Type"] == "application/apply-patch+yaml"
    assert sent.query == {"fieldManager": "ctrl", "force": "true"}


async def test_delete_sends_propagation_and_preconditions(client: Client, api: FakeApi) -> None:
    created = await client.create(configmap("d"))
    uid = created["metadata"]["uid"]
    with pytest.raises(ConflictError):
        await client.delete(CM, "d", uid="someone-else")
    answer = await client.delete(
        CM, "d", uid=uid, propagation_policy=PropagationPolicy.FOREGROUND,
        grace_period_seconds=0, dry_run=False,
    )
    assert answer["status"] == "Success"
    body = api.requests_to("DELETE", "/api/v1/namespaces/team-a/configmaps/d")[-1].body
    assert body == {"kind": "DeleteOptions", "apiVersion": "v1",
                    "propagationPolicy": "Foreground", "gracePeriodSeconds": 0,
                    "preconditions": {"uid": uid}}


async def test_dry_run_is_sent_as_query_on_writes_and_in_delete_options(
    client: Client, api: FakeApi,
) -> None:
    await client.create(configmap("dry"), dry_run=True)
    assert api.requests[-1].query["dryRun"] == "All"
    await client.delete(CM, "dry", dry_run=True)
    assert api.requests[-1].body["dryRun"] == ["All"]


async def test_delete_collection_deletes_what_the_selector_matches(
    client: Client, api: FakeApi,
) -> None:
    await client.create(configmap("x1"))
    await client.create(configmap("x2"))
    await client.delete_collection(CM, label_selector="app=x")
    sent = api.requests_to("DELETE", "/api/v1/namespaces/team-a/configmaps")[0]
    assert sent.query == {"labelSelector": "app=x"}
    assert (await client.list(CM, namespace="team-a")).items == []


async def test_list_pages_with_limit_and_continue(client: Client) -> None:
    for i in range(5):
        await client.create(configmap(f"item{i}"))
    page = await client.list(CM, namespace="team-a", limit=2)
    assert [o["metadata"]["name"] for o in page] == ["item0", "item1"]
    assert page.continue_token and page.remaining_item_count == 3
    assert page.items[0]["kind"] == "ConfigMap"  # list items are made self-describing
    nxt = await client.list(CM, namespace="team-a", limit=2, continue_token=page.continue_token)
    assert [o["metadata"]["name"] for o in nxt] == ["item2", "item3"]


async def test_list_all_follows_continue_tokens_and_keeps_the_first_resource_version(
    client: Client, api: FakeApi,
) -> None:
    for i in range(5):
        await client.create(configmap(f"item{i}"))
    everything = await client.list_all(CM, namespace="team-a", page_size=2)
    assert len(everything) == 5
    assert everything.resource_version == str(api.rv)
    assert len(api.requests_to("GET", "/api/v1/namespaces/team-a/configmaps")) == 3


async def test_list_all_relists_in_one_request_when_the_continue_token_expires(
    client: Client, api: FakeApi,
) -> None:
    for i in range(3):
        await client.create(configmap(f"item{i}"))
    api.expire_continue = True
    everything = await client.list_all(CM, namespace="team-a", page_size=2)
    assert len(everything) == 3
    assert "limit" not in api.requests_to("GET", "/api/v1/namespaces/team-a/configmaps")[-1].query


async def test_list_without_namespace_lists_all_namespaces_with_selectors(
    client: Client, api: FakeApi,
) -> None:
    await client.create({**configmap("l1"), "metadata": {"name": "l1", "labels": {"a": "b"}}},
                        namespace="n1")
    await client.create(configmap("l2"), namespace="n2")
    found = await client.list(CM, label_selector="a=b", field_selector="metadata.name=l1")
    assert [o["metadata"]["name"] for o in found] == ["l1"]
    assert api.requests[-1].path == "/api/v1/configmaps"
    assert api.requests[-1].query == {"labelSelector": "a=b", "fieldSelector": "metadata.name=l1"}


async def test_cluster_scoped_resources_ignore_namespaces(client: Client, api: FakeApi) -> None:
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}})
    assert (await client.get(Kind("v1", "Namespace"), "ns1"))["metadata"]["name"] == "ns1"
    assert api.requests[-1].path == "/api/v1/namespaces/ns1"


async def test_status_and_scale_subresources(client: Client, api: FakeApi) -> None:
    widget = await client.create({"apiVersion": "example.com/v1", "kind": "Widget",
                                  "metadata": {"name": "w"}, "spec": {"replicas": 1}})
    widget["status"] = {"ready": True}
    await client.update_status(widget)
    assert api.requests[-1].path == "/apis/example.com/v1/namespaces/team-a/widgets/w/status"
    assert (await client.get_status(WIDGETS, "w"))["status"] == {"ready": True}
    await client.patch_status(WIDGETS, "w", {"status": {"ready": False}})
    assert (await client.get(WIDGETS, "w"))["status"] == {"ready": False}

    scale = await client.get_scale(WIDGETS, "w")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    scale["spec"]["replicas"] = 3
    assert (await client.update_scale(WIDGETS, "w", scale))["spec"]["replicas"] == 3
    await client.patch_scale(WIDGETS, "w", {"spec": {"replicas": 5}})
    assert (await client.get(WIDGETS, "w"))["spec"]["replicas"] == 5


async def test_discovery_is_cached_and_refreshed_when_a_kind_is_missing(
    client: Client, api: FakeApi,
) -> None:
    api.widgets_installed = False
    with pytest.raises(UnknownResourceError):
        await client.get(WIDGETS, "w")
    api.widgets_installed = True  # the CRD got installed meanwhile
    with pytest.raises(NotFoundError):
        await client.get(WIDGETS, "w")
    with pytest.raises(NotFoundError):
        await client.get(WIDGETS, "w")
    fetches = api.requests_to("GET", "/apis/example.com/v1")
    assert len(fetches) == 3  # miss, refresh on miss, then cached


async def test_resources_can_be_named_by_gvr_or_complete_info(client: Client, api: FakeApi) -> None:
    await client.create(configmap("g"))
    assert (await client.get(GVR("", "v1", "configmaps"), "g"))["metadata"]["name"] == "g"
    info = ResourceInfo("", "v1", "configmaps", "ConfigMap", namespaced=True)
    before = len(api.requests)
    assert (await client.get(info, "g"))["metadata"]["name"] == "g"
    assert len(api.requests) == before + 1  # no discovery needed


async def test_request_hook_sees_method_template_host_and_code(
    client: Client, recorder: Recorder,
) -> None:
    with pytest.raises(NotFoundError):
        await client.get(CM, "missing")
    record = recorder.records[-1]
    assert record.method == "GET"
    assert record.template == "/api/v1/namespaces/{namespace}/configmaps/{name}"
    assert record.path == "/api/v1/namespaces/team-a/configmaps/missing"
    assert record.code == 404 and record.host.startswith("127.0.0.1:")
    assert record.duration >= 0


async def test_raw_request_returns_decoded_json(client: Client) -> None:
    doc = await client.request("GET", "/api/v1")
    assert doc["groupVersion"] == "v1"


# -- typed resources --------------------------------------------------------------------


class Meta(BaseModel):
    name: str
    namespace: str | None = None
    resourceVersion: str | None = None
    uid: str | None = None


class WidgetSpec(BaseModel):
    replicas: int = 1
    message: str = ""


class Widget(BaseModel):
    """A pydantic model meeting the TypedResource protocol."""

    model_config = ConfigDict(populate_by_name=True)
    api_version: ClassVar[str] = "example.com/v1"
    kind: ClassVar[str] = "Widget"
    plural: ClassVar[str] = "widgets"
    namespaced: ClassVar[bool] = True

    metadata: Meta
    spec: WidgetSpec = Field(default_factory=WidgetSpec)
    status: dict[str, Any] | None = None


class PlainConfigMap:
    """A hand-written class using to_dict/from_dict and discovery for its plural."""

    api_version = "v1"
    kind = "ConfigMap"

    def __init__(self, name: str, data: dict[str, str]) -> None:
        self.name, self.data = name, data

    def to_dict(self) -> dict[str, Any]:
        return {"metadata": {"name": self.name}, "data": self.data}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> PlainConfigMap:
        return cls(doc["metadata"]["name"], doc.get("data") or {})


async def test_typed_pydantic_models_go_in_and_come_out(client: Client, api: FakeApi) -> None:
    created = await client.create(Widget(metadata=Meta(name="t"), spec=WidgetSpec(replicas=2)))
    assert isinstance(created, Widget)
    assert created.metadata.resourceVersion
    sent = api.requests_to("POST", "/apis/example.com/v1/namespaces/team-a/widgets")[0].body
    assert sent == {"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "t"}, "spec": {"replicas": 2, "message": ""}}
    got = await client.get(Widget, "t")
    assert isinstance(got, Widget) and got.spec.replicas == 2
    listed = await client.list(Widget, namespace="team-a")
    assert [w.metadata.name for w in listed] == ["t"]
    patched = await client.patch(Widget, "t", {"spec": {"message": "hi"}})
    assert patched.spec.message == "hi"
    # plural and namespaced on the class: no discovery request was needed
    assert not api.requests_to("GET", "/apis/example.com/v1")


async def test_typed_classes_with_to_dict_use_discovery_for_their_plural(
    client: Client,
) -> None:
    created = await client.create(PlainConfigMap("pc", {"a": "1"}))
    assert isinstance(created, PlainConfigMap) and created.data == {"a": "1"}
    got = await client.get(PlainConfigMap, "pc")
    assert isinstance(got, PlainConfigMap) and got.name == "pc"
