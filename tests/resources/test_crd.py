"""CRD generation: golden cases, structural validity, and a server that accepts the result."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import yaml
from pydantic import Field

from setpoint.resources import (
    ConditionedStatus,
    CRDError,
    CustomResource,
    Int32,
    IntOrString,
    ListType,
    Model,
    PreserveUnknownFields,
    PrinterColumn,
    Rule,
    Scale,
    SchemaError,
    crd_for,
    discover_resources,
    dump_yaml,
    generate_crds,
    rules,
)
from setpoint.resources.models import PodTemplateSpec, ResourceRequirements

from .conftest import API

try:
    from setpoint.cluster.apiextensions.schema import validate_crd
except ImportError:  # pragma: no cover - the CRD package may not export it yet
    from setpoint.cluster.apiextensions.schema.definition import validate_crd

FIXTURES = Path(__file__).parent / "fixtures"


class WidgetSpec(Model):
    size: int = Field(ge=1)
    message: str


class WidgetStatus(Model):
    ready: bool | None = None
    observed_generation: int | None = None


class Widget(CustomResource, group="bench.setpoint.dev", version="v1"):
    spec: WidgetSpec
    status: WidgetStatus | None = None


class Topology(StrEnum):
    SHARDED = "sharded"
    REPLICATED = "replicated"


class Port(Model):
    name: str
    port: Int32 = Field(ge=1, le=65535)


@rules(Rule("self.minReplicas <= self.replicas", message="minReplicas exceeds replicas"))
class MemcachedSpec(Model):
    """What a memcached pool should look like."""

    replicas: int = Field(3, ge=1, description="Number of memcached pods.")
    min_replicas: int = 1
    topology: Topology = Topology.SHARDED
    mode: Literal["fast", "safe"] = "fast"
    resources: ResourceRequirements | None = None
    template: PodTemplateSpec | None = None
    ports: Annotated[list[Port], ListType.map(keys=["name"])] = Field(
        default_factory=list, max_length=4)
    target: IntOrString = "50%"
    labels: dict[str, str] = Field(default_factory=dict)
    config: dict[str, Any] | None = None
    image: Annotated[str, Rule("self == oldSelf", message="image is immutable")] = Field(
        "memcached:1.6", min_length=1, pattern="^[a-z]")
    ratio: float = Field(0.5, gt=0, lt=1)
    extra: Annotated[dict[str, Any], PreserveUnknownFields()] = Field(default_factory=dict)


class MemcachedStatus(ConditionedStatus):
    ready_replicas: int = 0
    selector: str | None = None


class Memcached(
    CustomResource, group="cache.setpoint.dev", version="v1", short_names=["mc"],
    categories=["all"],
    printer_columns=[PrinterColumn("Replicas", "integer", ".spec.replicas"),
                     PrinterColumn("Ready", "integer", ".status.readyReplicas", priority=1),
                     PrinterColumn.age()],
    scale=Scale(".spec.replicas", ".status.readyReplicas", ".status.selector"),
    rules=[Rule("self.metadata.name.size() <= 40", message="name too long")],
):
    """A memcached pool behind a proxy."""

    spec: MemcachedSpec
    status: MemcachedStatus = MemcachedStatus()


def _schema(crd: dict[str, Any], version: int = 0) -> dict[str, Any]:
    schema = crd["spec"]["versions"][version]["schema"]["openAPIV3Schema"]
    assert isinstance(schema, dict)
    return schema


def test_widget_crd_is_the_golden_one() -> None:
    crd = crd_for(Widget)
    schema = _schema(crd)
    assert crd["metadata"] == {"name": "widgets.bench.setpoint.dev"}
    assert crd["spec"]["group"] == "bench.setpoint.dev"
    assert crd["spec"]["names"] == {"kind": "Widget", "listKind": "WidgetList",
                                    "plural": "widgets", "singular": "widget"}
    assert crd["spec"]["scope"] == "Namespaced"
    version = crd["spec"]["versions"][0]
    assert {k: version[k] for k in ("name", "served", "storage", "subresources")} == {
        "name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}
    assert schema["type"] == "object"
    assert schema["required"] == ["spec"]
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["properties"]["spec"] == {
        "type": "object",
        "properties": {"size": {"type": "integer", "minimum": 1},
                       "message": {"type": "string"}},
        "required": ["size", "message"],
    }
    assert schema["properties"]["status"] == {
        "type": "object",
        "properties": {"ready": {"type": "boolean"},
                       "observedGeneration": {"type": "integer"}},
    }
    assert validate_crd(crd) == []


def test_memcached_crd_carries_names_columns_and_subresources() -> None:
    crd = crd_for(Memcached)
    names = crd["spec"]["names"]
    assert names["shortNames"] == ["mc"]
    assert names["categories"] == ["all"]
    version = crd["spec"]["versions"][0]
    assert version["additionalPrinterColumns"] == [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas",
         "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    assert version["subresources"] == {
        "status": {},
        "scale": {"specReplicasPath": ".spec.replicas",
                  "statusReplicasPath": ".status.readyReplicas",
                  "labelSelectorPath": ".status.selector"},
    }
    assert validate_crd(crd) == []


def test_memcached_schema_translates_constraints_docs_and_markers() -> None:
    schema = _schema(crd_for(Memcached))
    assert schema["description"] == "A memcached pool behind a proxy."
    assert schema["x-kubernetes-validations"] == [
        {"rule": "self.metadata.name.size() <= 40", "message": "name too long"}]
    spec = schema["properties"]["spec"]
    props = spec["properties"]
    assert spec["description"] == "What a memcached pool should look like."
    assert spec["x-kubernetes-validations"] == [
        {"rule": "self.minReplicas <= self.replicas", "message": "minReplicas exceeds replicas"}]
    assert props["replicas"] == {"description": "Number of memcached pods.",
                                 "type": "integer", "minimum": 1, "default": 3}
    assert props["topology"]["enum"] == ["sharded", "replicated"]
    assert props["topology"]["default"] == "sharded"
    assert props["mode"]["enum"] == ["fast", "safe"]
    assert props["ports"]["x-kubernetes-list-type"] == "map"
    assert props["ports"]["x-kubernetes-list-map-keys"] == ["name"]
    assert props["ports"]["maxItems"] == 4
    assert "default" not in props["ports"]
    assert props["ports"]["items"]["properties"]["port"] == {
        "type": "integer", "format": "int32", "minimum": 1, "maximum": 65535}
    assert props["target"] == {"anyOf": [{"type": "integer"}, {"type": "string"}],
                               "x-kubernetes-int-or-string": True, "default": "50%"}
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert props["config"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["image"]["x-kubernetes-validations"] == [
        {"rule": "self == oldSelf", "message": "image is immutable"}]
    assert (props["image"]["minLength"], props["image"]["pattern"]) == (1, "^[a-z]")
    assert props["ratio"] == {"type": "number", "minimum": 0, "exclusiveMinimum": True,
                              "maximum": 1, "exclusiveMaximum": True, "default": 0.5}
    assert props["extra"]["x-kubernetes-preserve-unknown-fields"] is True
    assert spec.get("required") is None  # every field has a default


def test_embedded_built_in_types_use_the_kubernetes_definitions() -> None:
    props = _schema(crd_for(Memcached))["properties"]["spec"]["properties"]
    limits = props["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True
    assert limits["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    pod = props["template"]["properties"]["spec"]
    containers = pod["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map"
    ports = containers["items"]["properties"]["ports"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"
    # an embedded ObjectMeta keeps the fields a template sets instead of pruning them all
    assert set(props["template"]["properties"]["metadata"]["properties"]) >= {
        "labels", "annotations", "name"}


def test_status_conditions_are_a_map_list_keyed_by_type() -> None:
    status = _schema(crd_for(Memcached))["properties"]["status"]
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert "type" in conditions["items"]["required"]
    assert "default" not in status  # status is not defaulted onto new objects


def test_optional_fields_are_not_nullable_but_required_nullable_ones_are() -> None:
    class Spec(Model):
        maybe: int | None = None
        must_say: str | None
        items: list[int | None] = Field(default_factory=list)

    class Nully(CustomResource, group="example.setpoint.dev", version="v1"):
        spec: Spec

    props = _schema(crd_for(Nully))["properties"]["spec"]["properties"]
    assert props["maybe"] == {"type": "integer"}
    assert props["mustSay"] == {"type": "string", "nullable": True}
    assert props["items"]["items"] == {"type": "integer", "nullable": True}


def test_unions_other_than_int_or_string_are_refused() -> None:
    class Spec(Model):
        either: int | list[str]

    class Bad(CustomResource, group="example.setpoint.dev", version="v1"):
        spec: Spec

    with pytest.raises(SchemaError, match=r"spec\.either: a union"):
        crd_for(Bad)


def test_a_decimal_field_is_refused_naming_the_types_to_use() -> None:
    """pydantic's JSON schema of a Decimal is a union of number and string: the error said
    only "a union of number, string", a type the class never wrote."""
    from decimal import Decimal

    class Spec(Model):
        price: Decimal

    class Priced(CustomResource, group="example.setpoint.dev", version="v1"):
        spec: Spec

    with pytest.raises(SchemaError) as raised:
        crd_for(Priced)
    assert str(raised.value).endswith(
        "spec.price: a union of number, string (a Decimal is one: use float, or Quantity "
        "for amounts) cannot be expressed in a structural schema; use one type, "
        "IntOrString, or Any with PreserveUnknownFields")


@pytest.mark.parametrize(("group", "version", "message"), [
    ("Example.COM", "v1", "group 'Example.COM' must be a lowercase domain with at least "
                          "one dot, such as 'example.com'"),
    ("example", "v1", "group 'example' must be a lowercase domain with at least one dot"),
    ("example.com", "V1", "version 'V1' must be a lowercase DNS label, such as 'v1' or "
                          "'v1alpha1'"),
    ("example.com", "1", "version '1' must be a lowercase DNS label"),
], ids=["capitals", "no-dot", "version-capital", "version-digit"])
def test_a_group_or_version_the_server_would_refuse_is_refused_at_the_class(
        group: str, version: str, message: str) -> None:
    """The server refuses such a CRD (apiextensions-apiserver
    pkg/apis/apiextensions/validation/validation.go, ValidateCustomResourceDefinitionSpec:
    a lowercase RFC 1123 subdomain "with at least one dot"; ValidateCustomResource
    DefinitionVersion: IsDNS1035Label): said where the class is declared instead, before
    any CRD is generated or applied."""
    with pytest.raises(TypeError) as raised:
        class Thing(CustomResource, group=group, version=version):
            pass
    assert str(raised.value).startswith(f"Thing: {message}")


def test_recursive_models_are_refused() -> None:
    class Node(Model):
        children: list[Node] = Field(default_factory=list)

    class Tree(CustomResource, group="example.setpoint.dev", version="v1"):
        spec: Node

    with pytest.raises(SchemaError, match="cannot recurse"):
        crd_for(Tree)


def test_versions_of_a_kind_share_one_crd_with_one_storage_version() -> None:
    class SpecA(Model):
        size: int = 1

    class ThingV1Beta1(CustomResource, group="example.setpoint.dev", version="v1beta1",
                       kind="Thing", deprecated=True, deprecation_warning="use v1"):
        spec: SpecA = SpecA()

    class Thing(CustomResource, group="example.setpoint.dev", version="v1", storage=True):
        spec: SpecA = SpecA()

    [crd] = generate_crds([ThingV1Beta1, Thing])
    versions = crd["spec"]["versions"]
    assert [(v["name"], v["storage"], v.get("deprecated")) for v in versions] == [
        ("v1", True, None), ("v1beta1", False, True)]
    assert versions[1]["deprecationWarning"] == "use v1"
    assert "conversion" not in crd["spec"]
    assert validate_crd(crd) == []


def test_several_versions_without_a_storage_version_are_an_error() -> None:
    class A(CustomResource, group="example.setpoint.dev", version="v1", kind="Dual"):
        pass

    class B(CustomResource, group="example.setpoint.dev", version="v2", kind="Dual"):
        pass

    with pytest.raises(CRDError, match="storage=True"):
        generate_crds([A, B])


def test_an_invalid_schema_is_caught_by_the_validator() -> None:
    # the validator the tests rely on must be able to fail
    crd = crd_for(Widget)
    _schema(crd)["properties"]["spec"]["properties"]["size"].pop("type")
    assert validate_crd(crd) != []


def test_discover_finds_custom_resources_in_a_file_and_a_module() -> None:
    found = discover_resources(FIXTURES / "crds_module.py")
    assert [(c.kind, c.declaration().version) for c in found] == [
        ("Gadget", "v1"), ("Gadget", "v1alpha1")]
    from tests.resources.fixtures import crds_module

    assert [c.__name__ for c in discover_resources(crds_module)] == ["Gadget", "GadgetV1Alpha1"]
    [crd] = generate_crds(found)
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v1alpha1"]


def test_yaml_output_reads_back_as_the_same_documents() -> None:
    docs = generate_crds([Widget, Memcached])
    text = dump_yaml(docs)
    assert text.startswith("---\napiVersion: apiextensions.k8s.io/v1\n")
    assert list(yaml.safe_load_all(text)) == docs


async def test_the_server_accepts_the_crd_and_enforces_its_schema(api: API) -> None:
    await api.establish(crd_for(Memcached))
    path = "/apis/cache.setpoint.dev/v1/namespaces/default/memcacheds"
    mc = Memcached(name="m", namespace="default", spec=MemcachedSpec(replicas=2))
    created = await api.create(path, mc.to_dict())
    assert Memcached.model_validate(created).to_dict() == created
    assert created["spec"]["replicas"] == 2

    bad = Memcached(name="bad", namespace="default", spec=MemcachedSpec(replicas=1,
                                                                          min_replicas=3))
    status, body = await api.request("POST", path, bad.to_dict())
    assert status == 422
    assert "minReplicas exceeds replicas" in body["message"]


async def test_server_defaults_come_from_the_python_defaults(api: API) -> None:
    await api.establish(crd_for(Memcached))
    path = "/apis/cache.setpoint.dev/v1/namespaces/default/memcacheds"
    created = await api.create(path, {"apiVersion": "cache.setpoint.dev/v1",
                                      "kind": "Memcached", "metadata": {"name": "d"},
                                      "spec": {}})
    typed = Memcached.model_validate(created)
    assert typed.spec == MemcachedSpec()
    assert created["spec"]["replicas"] == 3 and created["spec"]["target"] == "50%"
