"""RuntimeClass validation over HTTP, with kube-apiserver 1.32's causes.

Source: pkg/apis/node/validation/validation.go (ValidateRuntimeClass: the handler a DNS
label, validateOverhead through core's ValidateResourceRequirements, validateScheduling:
nodeSelector labels and tolerations; ValidateRuntimeClassUpdate: the handler is immutable),
as pkg/registry/node/runtimeclass/strategy.go calls them.
"""

from __future__ import annotations

from tests.cluster.fidelity.builtin_server import MERGE, Kube

RUNTIME_CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
DNS_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
             "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
             "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def causes(kube: Kube, method: str, path: str, body: object,
           content_type: str = "application/json") -> list[tuple[str, str, str]]:
    status, answer = kube.call(method, path, body, content_type)
    assert (status, answer.get("reason")) == (422, "Invalid"), answer
    return [(c["field"], c["reason"], c["message"]) for c in answer["details"]["causes"]]


def test_runtime_class_create_is_validated(kube: Kube) -> None:
    assert causes(kube, "POST", RUNTIME_CLASSES, {
        "metadata": {"name": "rc-bad"}, "handler": "Run_C",
        "overhead": {"podFixed": {"cpu": "-1"}},
        "scheduling": {"nodeSelector": {"a b": "c"},
                       "tolerations": [{"operator": "Equal", "value": "x"}]}}) == [
        ("handler", "FieldValueInvalid", f'Invalid value: "Run_C": {DNS_LABEL}'),
        ("overhead.limits[cpu]", "FieldValueInvalid",
         'Invalid value: "-1": must be greater than or equal to 0'),
        ("scheduling.nodeSelector", "FieldValueInvalid",
         "Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' "
         "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("scheduling.tolerations[0].operator", "FieldValueInvalid",
         'Invalid value: "Equal": operator must be Exists when `key` is empty, which means '
         '"match all values and all keys"')]
    assert causes(kube, "POST", RUNTIME_CLASSES, {"metadata": {"name": "rc-empty"},
                                                  "handler": ""}) == [
        ("handler", "FieldValueInvalid", f'Invalid value: "": {DNS_LABEL}')]


def test_runtime_class_handler_is_immutable(kube: Kube) -> None:
    status, body = kube.call("POST", RUNTIME_CLASSES, {"metadata": {"name": "rc-fixed"},
                                                       "handler": "runc"})
    assert status == 201, body
    try:
        assert causes(kube, "PATCH", f"{RUNTIME_CLASSES}/rc-fixed", {"handler": "kata"},
                      MERGE) == [
            ("handler", "FieldValueInvalid", 'Invalid value: "kata": field is immutable')]
    finally:
        kube.call("DELETE", f"{RUNTIME_CLASSES}/rc-fixed")
