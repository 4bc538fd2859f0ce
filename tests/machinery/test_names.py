"""Name formats, generateName and ObjectMeta validation with Kubernetes' messages."""

from __future__ import annotations

import pytest

from setpoint.machinery import names

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def test_dns_subdomain_messages() -> None:
    assert names.is_dns1123_subdomain("example.com") == []
    assert names.is_dns1123_subdomain("Bad_Name") == [SUBDOMAIN_MSG]
    assert names.is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_dns_label_says_dots_when_it_is_a_subdomain() -> None:
    assert names.is_dns1123_label("a.b") == ["must not contain dots"]
    assert names.is_dns1123_label("my-name") == []
    assert names.is_dns1035_label("1abc")[0].startswith("a DNS-1035 label must consist")


@pytest.mark.parametrize(("value", "errors"), [
    ("app", 0), ("example.com/app", 0), ("-bad", 1), ("/x", 1), ("a/b/c", 1),
    ("x/" + "a" * 64, 1), ("Bad_Prefix/x", 1),
])
def test_qualified_names(value: str, errors: int) -> None:
    assert len(names.is_qualified_name(value)) == errors


def test_config_keys_reject_dots_only_names() -> None:
    assert names.is_config_map_key("key.name") == []
    assert names.is_config_map_key("..") == ["must not be '..'"]
    assert "must not start with '..'" in names.is_config_map_key("..x")


def test_path_segment_names() -> None:
    assert names.validate_path_segment_name("..", False) == ["may not be '..'"]
    assert names.validate_path_segment_name("a/b%", False) == [
        "may not contain '/'", "may not contain '%'"]
    assert names.validate_path_segment_name("..", True) == []


def test_generate_name_uses_kubernetes_alphabet_and_truncates() -> None:
    name = names.generate_name("web-")
    assert name.startswith("web-") and len(name) == 9
    assert all(c in names.GENERATE_NAME_ALPHABET for c in name[4:])
    long = names.generate_name("x" * 80)
    assert len(long) == 63 and long.startswith("x" * 58)


def test_generate_name_prefix_may_end_with_a_dash() -> None:
    assert names.name_is_dns_subdomain("web-", True) == []
    assert names.name_is_dns_subdomain("web-", False) == [SUBDOMAIN_MSG]


def test_object_meta_requires_a_name() -> None:
    causes = names.validate_object_meta({"namespace": "ns"}, True)
    assert [(c.field, c.message) for c in causes] == [
        ("metadata.name", "Required value: name or generateName is required")]


def test_object_meta_reports_generate_name_and_name() -> None:
    causes = names.validate_object_meta(
        {"generateName": "Bad_", "name": "Bad_abcde", "namespace": "ns"}, True)
    assert [c.field for c in causes] == ["metadata.generateName", "metadata.name"]


def test_object_meta_namespace_rules() -> None:
    assert [c.message for c in names.validate_object_meta({"name": "x"}, True)] == [
        "Required value"]
    assert [c.message for c in names.validate_object_meta(
        {"name": "x", "namespace": "n"}, False)] == ["Forbidden: not allowed on this type"]


def test_annotations_over_256k_are_too_long() -> None:
    causes = names.validate_annotations({"a": "x" * (256 * 1024)}, "metadata.annotations")
    assert [(c.reason, c.message) for c in causes] == [
        ("FieldValueTooLong", "Too long: may not be more than 262144 bytes")]


def test_two_controllers_are_invalid() -> None:
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": n, "controller": True}
            for n in ("a", "b")]
    [cause] = names.validate_owner_references(refs, "metadata.ownerReferences")
    assert cause.message.startswith("Invalid value: []v1.OwnerReference{v1.OwnerReference{")
    assert cause.message.endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/a and ConfigMap/b")


def test_owner_reference_fields_are_required() -> None:
    causes = names.validate_owner_references([{}], "m")
    assert [c.field for c in causes] == ["m.apiVersion", "m.kind", "m.name", "m.uid"]


def test_finalizers_orphan_and_foreground_conflict() -> None:
    causes = names.validate_finalizers(["orphan", "foregroundDeletion"], "metadata.finalizers")
    assert causes[-1].message.endswith("finalizer orphan and foregroundDeletion cannot be both set")


def test_no_new_finalizers_while_deleting() -> None:
    old = {"name": "x", "deletionTimestamp": "t", "finalizers": ["a/b"]}
    new = {"name": "x", "finalizers": ["a/b", "example.com/new"]}
    [cause] = names.validate_object_meta_update(new, old)
    assert cause.message == ("Forbidden: no new finalizers can be added if the object is being "
                             'deleted, found new finalizers []string{"example.com/new"}')


def test_identity_fields_are_immutable() -> None:
    causes = names.validate_object_meta_update({"name": "y", "uid": "2"},
                                               {"name": "x", "uid": "1"})
    assert [c.field for c in causes] == ["metadata.name", "metadata.uid"]
