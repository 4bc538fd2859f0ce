"""Model and Resource: wire names, lossless round trips, shortcuts and repr."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from setpoint.resources import ConditionedStatus, CustomResource, Model, Quantity, Time
from setpoint.resources._codegen import snake_name
from setpoint.resources.models import ConfigMap, Container, Deployment, ObjectMeta, Pod


class ThingSpec(Model):
    replica_count: int = 1
    pod_template: dict[str, str] | None = None


class ThingStatus(ConditionedStatus):
    ready_replicas: int = 0


class Thing(CustomResource, group="example.setpoint.dev", version="v1"):
    spec: ThingSpec = ThingSpec()
    status: ThingStatus = ThingStatus()


def test_fields_are_snake_case_in_python_and_camel_case_on_the_wire() -> None:
    spec = ThingSpec.model_validate({"replicaCount": 3})
    assert spec.replica_count == 3
    assert ThingSpec(replica_count=2).to_dict() == {"replicaCount": 2}


def test_unset_optional_fields_are_omitted_but_a_server_null_is_kept() -> None:
    assert Container(name="c").to_dict() == {"name": "c"}
    meta = ObjectMeta.model_validate({"name": "x", "creationTimestamp": None})
    assert meta.to_dict() == {"name": "x", "creationTimestamp": None}


def test_unknown_fields_from_the_server_are_kept() -> None:
    data = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "newMeta": 1},
            "data": {"a": "b"}, "fromTheFuture": {"x": [1, 2]}}
    assert ConfigMap.model_validate(data).to_dict() == data


def test_untouched_default_status_is_not_written_but_a_changed_one_is() -> None:
    thing = Thing(name="t")
    assert "status" not in thing.to_dict()
    thing.status.ready_replicas = 2
    assert thing.to_dict()["status"] == {"readyReplicas": 2}


def test_what_is_omitted_follows_what_was_set_after_construction_too() -> None:
    """A field assigned later counts as set (a None assigned is written as null), one
    assigned a value is written, and a dump limited by ``include`` stays limited."""
    thing = Thing(name="t")
    thing.spec.pod_template = None
    thing.metadata.labels = {"a": "b"}
    wire = thing.to_dict()
    assert wire["spec"] == {"replicaCount": 1, "podTemplate": None}
    assert wire["metadata"] == {"name": "t", "labels": {"a": "b"}}
    assert "status" not in wire
    assert thing.model_dump(mode="json", by_alias=True, include={"spec"}) == {
        "apiVersion": "example.setpoint.dev/v1", "kind": "Thing",
        "spec": {"replicaCount": 1, "podTemplate": None}}


def test_resource_serializes_api_version_and_kind_first() -> None:
    body = Thing(name="t", namespace="ns").to_dict()
    assert list(body)[:3] == ["apiVersion", "kind", "metadata"]
    assert body["apiVersion"] == "example.setpoint.dev/v1"
    assert body["kind"] == "Thing"
    assert body["metadata"] == {"name": "t", "namespace": "ns"}


def test_name_namespace_labels_shortcuts_fill_metadata() -> None:
    pod = Pod(name="p", namespace="n", labels={"a": "b"})
    assert pod.metadata.name == "p"
    assert pod.metadata.namespace == "n"
    assert pod.metadata.labels == {"a": "b"}


def test_an_object_of_another_kind_is_rejected() -> None:
    with pytest.raises(ValidationError, match="kind is 'Secret'"):
        ConfigMap.model_validate({"apiVersion": "v1", "kind": "Secret", "metadata": {}})
    with pytest.raises(ValidationError, match="apiVersion is 'v2', but ConfigMap is v1"):
        ConfigMap.model_validate({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {}})


class Labelled(CustomResource, group="example.setpoint.dev", version="v1"):
    labels: dict[str, str] | None = None


@pytest.mark.parametrize("round_", [1, 2])  # the second reads the class's shortcuts kept
def test_a_shortcut_that_is_a_field_of_the_kind_stays_its_field(round_: int) -> None:
    obj = Labelled.model_validate({"name": "x", "namespace": "n", "labels": {"a": "b"}})
    assert obj.labels == {"a": "b"}
    assert (obj.metadata.name, obj.metadata.namespace, obj.metadata.labels) == ("x", "n", None)
    assert Pod(name="p", labels={"a": "b"}).metadata.labels == {"a": "b"}


def test_typed_resource_class_attributes() -> None:
    assert (Deployment.api_version, Deployment.kind, Deployment.plural,
            Deployment.namespaced) == ("apps/v1", "Deployment", "deployments", True)
    assert (Thing.api_version, Thing.plural, Thing.namespaced) == (
        "example.setpoint.dev/v1", "things", True)


def test_repr_names_the_object_and_skips_unset_fields() -> None:
    text = repr(Thing(name="t", namespace="n", spec=ThingSpec(replica_count=2)))
    assert text.startswith("Thing(name='t', namespace='n', spec=ThingSpec(replica_count=2)")
    assert repr(Container(name="c")) == "Container(name='c')"


def test_times_serialize_as_kubernetes_does() -> None:
    class Stamped(Model):
        at: Time

    stamped = Stamped.model_validate({"at": "2024-05-01T10:00:00Z"})
    assert stamped.at == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert stamped.to_dict() == {"at": "2024-05-01T10:00:00Z"}
    assert Stamped(at=datetime(2024, 5, 1, 10, 0, 0, 123)).to_dict() == {
        "at": "2024-05-01T10:00:00Z"}


def test_quantities_keep_their_spelling() -> None:
    class Limits(Model):
        cpu: Quantity

    assert Limits(cpu="500m").to_dict() == {"cpu": "500m"}
    assert Limits(cpu=2).to_dict() == {"cpu": 2}
    assert Limits(cpu=0.5).to_dict() == {"cpu": "0.5"}


@pytest.mark.parametrize(("wire", "python"), [
    ("podIP", "pod_ip"), ("hostIPs", "host_ips"), ("apiVersion", "api_version"),
    ("from", "from_"), ("x-kubernetes-list-type", "x_kubernetes_list_type"),
    ("ipBlock", "ip_block"), ("seLinuxOptions", "se_linux_options"), ("$ref", "ref"),
])
def test_generated_attribute_names(wire: str, python: str) -> None:
    assert snake_name(wire) == python


def test_models_meet_the_clients_typed_resource_contract() -> None:
    from setpoint.client.typed import from_body, is_typed_class, to_body

    assert is_typed_class(Thing) and is_typed_class(Deployment)
    body = to_body(Thing(name="t", spec=ThingSpec(replica_count=2)))
    assert body == {"apiVersion": "example.setpoint.dev/v1", "kind": "Thing",
                    "metadata": {"name": "t"}, "spec": {"replicaCount": 2}}
    assert from_body(Thing, body).spec.replica_count == 2
