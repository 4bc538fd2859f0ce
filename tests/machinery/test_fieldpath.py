import glob
import json
from pathlib import Path
from typing import Any

import pytest

from setpoint.machinery import fieldpath as fp
from setpoint.machinery import typedvalue as tv
from setpoint.machinery.fieldpath import FieldSet
from setpoint.machinery.schema import Schema, definitions
from setpoint.machinery.typedvalue import SchemaError
from tests.machinery import test_managedfields as goldens


def _golden_fields_v1() -> list[str]:
    found = set()

    def walk(v: object) -> None:
        if isinstance(v, dict):
            if v.get("fieldsType") == "FieldsV1" and isinstance(v.get("fieldsV1"), dict):
                found.add(json.dumps(v["fieldsV1"]))
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for f in glob.glob(str(goldens.CONFORMANCE / "golden" / "*.json")):
        walk(json.loads(Path(f).read_text()))
    return sorted(found)


@pytest.mark.skipif(not goldens.available(), reason="conformance corpus not present")
def test_every_recorded_fields_v1_decodes_and_reencodes_identically_in_order() -> None:
    recorded = _golden_fields_v1()
    assert len(recorded) > 20
    for text in recorded:
        # the corpus replaced uids by <uid:x> tokens after Go had written the keys
        again = _unescape(fp.encode(fp.decode(json.loads(text))))
        assert json.dumps(again) == text


def _unescape(node: dict[str, Any]) -> dict[str, Any]:
    return {k.replace("\\u003c", "<").replace("\\u003e", ">"): _unescape(v)
            for k, v in node.items()}


def test_key_elements_sort_their_fields_and_html_escape_like_go() -> None:
    assert fp.key([("protocol", "TCP"), ("containerPort", 80)]) == (
        'k:{"containerPort":80,"protocol":"TCP"}')
    assert fp.value("<a&b>") == 'v:"\\u003ca\\u0026b\\u003e"'
    assert fp.value(2.0) == "v:2"


def test_paths_print_as_in_apply_conflicts() -> None:
    path = ("f:spec", "f:containers", fp.key([("name", "app")]), "f:ports",
            fp.key([("containerPort", 80), ("protocol", "TCP")]), "f:hostPort")
    assert fp.path_string(path) == (
        '.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"].hostPort')
    assert fp.path_string(("f:finalizers", fp.value("x"), )) == '.finalizers[="x"]'
    assert fp.path_string(("f:args", fp.index(3))) == ".args[3]"


def test_elements_order_fields_then_keys_then_values_then_indexes() -> None:
    elements = [fp.index(0), fp.value("b"), fp.value(10), fp.value(2), fp.key([("a", 1)]),
                fp.field("z"), fp.field("a"), fp.value(True)]
    assert fp.sort_elements(elements) == [
        "f:a", "f:z", 'k:{"a":1}', "v:2", "v:10", 'v:"b"', "v:true", "i:0"]


def test_decoding_rejects_unknown_element_prefixes() -> None:
    with pytest.raises(ValueError):
        fp.decode({"x:bad": {}})
    with pytest.raises(ValueError):
        fp.decode({"f:a": []})


def test_difference_keeps_children_of_a_removed_parent_but_recursive_difference_drops_them(
) -> None:
    s = FieldSet.of(("f:spec",), ("f:spec", "f:a"), ("f:status", "f:b"))
    minus = FieldSet.of(("f:spec",))
    assert list(s.difference(minus)) == [("f:spec", "f:a"), ("f:status", "f:b")]
    assert list(s.recursive_difference(minus)) == [("f:status", "f:b")]


def test_union_and_intersection_work_on_members() -> None:
    a = FieldSet.of(("f:a", "f:b"), ("f:c",))
    b = FieldSet.of(("f:a", "f:b"), ("f:d",))
    assert list(a.intersection(b)) == [("f:a", "f:b")]
    assert set(a.union(b)) == {("f:a", "f:b"), ("f:c",), ("f:d",)}
    assert a.difference(a).empty()
    assert not a.has(("f:a",)) and a.has(("f:a", "f:b"))


def _deployment() -> Schema:
    s = definitions().for_kind("apps", "v1", "Deployment")
    assert s is not None
    return s


def test_fieldset_of_uses_list_keys_with_schema_defaults_and_atomic_structs() -> None:
    obj = {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {
        "containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}}}
    got = fp.encode(tv.fieldset_of(_deployment(), obj))
    assert got == {"f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {
        'k:{"name":"c"}': {".": {}, "f:name": {}, "f:ports": {
            'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}}}


def test_fieldset_of_marks_set_items_and_map_entries() -> None:
    meta = {"metadata": {"finalizers": ["a", "b"], "labels": {"x": "y"}}}
    got = fp.encode(tv.fieldset_of(_deployment(), meta))
    assert got == {"f:metadata": {"f:finalizers": {'v:"a"': {}, 'v:"b"': {}},
                                  "f:labels": {"f:x": {}}}}


def test_fieldset_of_owns_explicit_nulls_and_empty_structs() -> None:
    got = fp.encode(tv.fieldset_of(_deployment(), {"spec": {"strategy": {}, "template": None}}))
    assert got == {"f:spec": {"f:strategy": {}, "f:template": {}}}


def test_strict_fieldset_of_refuses_undeclared_fields_and_duplicate_keys() -> None:
    with pytest.raises(SchemaError, match=r"\.spec\.bogus: field not declared in schema"):
        tv.fieldset_of(_deployment(), {"spec": {"bogus": 1}}, strict=True)
    twice = {"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}}
    with pytest.raises(SchemaError, match="duplicate entries"):
        tv.fieldset_of(_deployment(), twice, strict=True)
    # structured-merge-diff's words (typed/validate.go, typed/helpers.go)
    with pytest.raises(SchemaError, match=r'containers: element 0: associative list with '
                                          r'keys has an element that omits key field "name"'):
        tv.fieldset_of(_deployment(), {"spec": {"template": {"spec": {"containers": [{}]}}}},
                       strict=True)


def test_without_schema_every_map_key_is_owned_and_lists_are_atomic() -> None:
    got = fp.encode(tv.fieldset_of(None, {"spec": {"a": {"b": 1}, "l": [1, 2]}}))
    assert got == {"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:l": {}}}


def test_custom_resources_get_typed_metadata_and_preserved_fields_are_deduced() -> None:
    schema = Schema({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}})
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
           "spec": {"free": {"any": {"deep": [1]}}}}
    got = fp.encode(tv.fieldset_of(schema, obj, strict=True))
    assert got == {"f:apiVersion": {}, "f:kind": {},
                   "f:metadata": {"f:labels": {"f:a": {}}, "f:name": {}},
                   "f:spec": {"f:free": {"f:any": {".": {}, "f:deep": {}}}}}


def test_named_fields_with_owned_descendants_become_members() -> None:
    s = FieldSet.of(("f:metadata", "f:labels", "f:a"), ("f:spec", "f:replicas"))
    got = tv.ensure_named_fields_are_members(s, _deployment())
    assert set(got) == {("f:metadata",), ("f:metadata", "f:labels"),
                        ("f:metadata", "f:labels", "f:a"), ("f:spec",), ("f:spec", "f:replicas")}


def test_a_string_key_is_spelled_once_per_distinct_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write indexes the same list items again (conditions by type, containers by
    name, owner references by uid); a one-field string key is spelled once, the same as
    ``key`` spells it (structured-merge-diff's KeyByFields, fieldpath/element.go)."""
    spelled: list[Any] = []
    key = fp.key

    def counting(fields: Any) -> str:
        spelled.append(list(fields))
        return key(fields)

    monkeypatch.setattr(fp, "key", counting)
    shape = tv.Shape(tv.LIST, keys=("type",))
    items = [{"type": "Spelled-Once<&>", "status": "True"}, {"type": "Spelled-Once<&>"}]
    elements = {tv.item_element(shape, item) for item in items}
    assert elements == {'k:{"type":"Spelled-Once\\u003c\\u0026\\u003e"}'}
    assert spelled == [[("type", "Spelled-Once<&>")]]
