"""The conversion webhook, called with ConversionReviews as the kube-apiserver sends them:
pairwise and hub-and-spoke conversions, metadata kept, failures reported per review."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import Field

from setpoint.client import Kind
from setpoint.resources import CustomResource, Model
from setpoint.resources._webhooks import ConversionRegistration
from setpoint.runtime import Conversion, ConversionError
from tests.runtime.test_webhook_support import post, running


class SpecV1(Model):
    replicas: int = 1


class SpecV2(Model):
    size: int = 1
    mode: str = "sharded"


class SpecV3(Model):
    shards: list[str] = Field(default_factory=list)


class CacheV1(CustomResource, group="conv.example.com", version="v1", kind="Cache"):
    spec: SpecV1 = Field(default_factory=SpecV1)


class CacheV2(CustomResource, group="conv.example.com", version="v2", kind="Cache"):
    spec: SpecV2 = Field(default_factory=SpecV2)


class CacheV3(CustomResource, group="conv.example.com", version="v3", kind="Cache"):
    spec: SpecV3 = Field(default_factory=SpecV3)


def hub_and_spokes() -> Conversion:
    """v2 is the hub; v1 and v3 convert to and from it only."""
    conversion = Conversion()

    @conversion.register(CacheV1, CacheV2)
    def v1_to_v2(old: CacheV1) -> CacheV2:
        return CacheV2(metadata=old.metadata, spec=SpecV2(size=old.spec.replicas))

    @conversion.register(CacheV2, CacheV1)
    def v2_to_v1(hub: CacheV2) -> CacheV1:
        return CacheV1(metadata=hub.metadata, spec=SpecV1(replicas=hub.spec.size))

    @conversion.register(CacheV3, CacheV2)
    def v3_to_v2(new: CacheV3) -> CacheV2:
        return CacheV2(metadata=new.metadata, spec=SpecV2(size=len(new.spec.shards)))

    @conversion.register(CacheV2, CacheV3)
    async def v2_to_v3(hub: CacheV2) -> CacheV3:
        meta = hub.metadata.model_copy(update={"labels": {"converted": "v3"}})
        return CacheV3(metadata=meta, spec=SpecV3(
            shards=[f"shard-{i}" for i in range(hub.spec.size)]))

    return conversion


def cache(version: str, spec: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {"apiVersion": f"conv.example.com/{version}", "kind": "Cache",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "resourceVersion": "7", "generation": 2,
                         "creationTimestamp": "2024-05-01T10:00:00Z",
                         "labels": {"app": "cache"}},
            "spec": spec}


def conversion_review(desired: str, *objects: dict[str, Any],
                      api_version: str = "apiextensions.k8s.io/v1") -> dict[str, Any]:
    return {"kind": "ConversionReview", "apiVersion": api_version,
            "request": {"uid": str(uuid.uuid4()), "desiredAPIVersion": desired,
                        "objects": list(objects)}}


async def convert(conversion: Conversion, body: dict[str, Any]) -> dict[str, Any]:
    async with running(conversion) as server:
        status, answer = await post(server, "/convert", body)
    assert status == 200
    assert answer["kind"] == "ConversionReview"
    assert answer["apiVersion"] == body["apiVersion"]
    assert answer["response"]["uid"] == body["request"]["uid"]
    response: dict[str, Any] = answer["response"]
    return response


async def test_spoke_to_spoke_goes_through_the_hub_and_keeps_metadata() -> None:
    response = await convert(hub_and_spokes(), conversion_review(
        "conv.example.com/v3", cache("v1", {"replicas": 2})))
    assert response["result"] == {"metadata": {}, "status": "Success"}
    [converted] = response["convertedObjects"]
    original = cache("v1", {})["metadata"]
    assert converted == {
        "apiVersion": "conv.example.com/v3", "kind": "Cache",
        # only labels and annotations may change: the rest is the original's, as it came
        "metadata": {**original, "labels": {"converted": "v3"}},
        "spec": {"shards": ["shard-0", "shard-1"]},
    }


async def test_objects_already_in_the_desired_version_pass_unchanged() -> None:
    mixed = [cache("v2", {"size": 4, "mode": "replicated"}, "a"),
             cache("v1", {"replicas": 5}, "b")]
    response = await convert(hub_and_spokes(), conversion_review("conv.example.com/v2", *mixed))
    first, second = response["convertedObjects"]
    assert first == mixed[0]
    assert second["apiVersion"] == "conv.example.com/v2"
    assert second["spec"] == {"size": 5, "mode": "sharded"}
    assert second["metadata"]["name"] == "b"


async def test_pairwise_function_wins_over_the_chain_through_the_hub() -> None:
    conversion = hub_and_spokes()
    conversion.add(CacheV1, CacheV3,
                   lambda old: CacheV3(metadata=old.metadata, spec=SpecV3(shards=["direct"])))
    response = await convert(conversion, conversion_review(
        "conv.example.com/v3", cache("v1", {"replicas": 2})))
    assert response["convertedObjects"][0]["spec"] == {"shards": ["direct"]}


async def test_dict_kinds_convert_dicts() -> None:
    conversion = Conversion()
    old, new = Kind("conv.example.com/v1", "Cache"), Kind("conv.example.com/v2", "Cache")

    @conversion.register(old, new)
    def up(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "spec": {"size": obj["spec"]["replicas"]}}

    response = await convert(conversion, conversion_review(
        "conv.example.com/v2", cache("v1", {"replicas": 9}),
        api_version="apiextensions.k8s.io/v1beta1"))
    assert response["convertedObjects"][0]["spec"] == {"size": 9}
    assert response["convertedObjects"][0]["apiVersion"] == "conv.example.com/v2"


async def test_a_missing_route_or_a_failing_function_answers_failure() -> None:
    conversion = Conversion()
    conversion.register(CacheV1, CacheV2)(lambda old: 1 / 0)
    no_route = await convert(conversion, conversion_review(
        "conv.example.com/v1", cache("v2", {})))
    failing = await convert(conversion, conversion_review(
        "conv.example.com/v2", cache("v1", {})))
    assert no_route["result"] == {
        "metadata": {}, "status": "Failure",
        "message": "no conversion of Cache from conv.example.com/v2 to conv.example.com/v1 "
                   "is registered"}
    assert failing["result"]["status"] == "Failure"
    assert failing["result"]["message"] == ("converting Cache from conv.example.com/v1 to "
                                            "conv.example.com/v2 failed: division by zero")
    assert failing["convertedObjects"] is None


async def test_a_conversion_returning_the_wrong_version_fails() -> None:
    conversion = Conversion()
    conversion.register(CacheV1, CacheV2)(lambda old: old)
    with pytest.raises(ConversionError, match=r"returned conv\.example\.com/v1 Cache"):
        await conversion.convert(cache("v1", {}), "conv.example.com/v2")


@pytest.mark.parametrize(("body", "message"), [
    (b"", "request body is empty"),
    (b"[]", "not a JSON object"),
    (b'{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v2"}',
     'no kind "ConversionReview" is registered for version "apiextensions.k8s.io/v2"'),
    (b'{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1"}',
     "conversion request is nil"),
])
async def test_a_body_that_is_not_a_conversion_review_is_a_400(body: bytes,
                                                                message: str) -> None:
    async with running(hub_and_spokes()) as server:
        status, answer = await post(server, "/convert", body)
    assert status == 400
    assert answer["code"] == 400 and answer["reason"] == "BadRequest"
    assert message in answer["message"]


def test_registration_rules_and_what_the_crds_are_told() -> None:
    conversion = hub_and_spokes()
    assert conversion.registrations() == [
        ConversionRegistration("conv.example.com", "Cache", "/convert")]
    with pytest.raises(ValueError, match="already registered"):
        conversion.add(CacheV1, CacheV2, lambda o: o)
    with pytest.raises(ValueError, match="same version"):
        conversion.add(CacheV1, CacheV1, lambda o: o)
    with pytest.raises(ValueError, match="not versions of one group and kind"):
        conversion.add(CacheV1, Kind("v1", "ConfigMap"), lambda o: o)
