"""The 1 MiB limit on a ConfigMap's and a Secret's data, over HTTP, as kube-apiserver 1.32
reports it.

Sources, pkg/apis/core/validation/validation.go: ValidateConfigMap (the decoded size of
``data`` and ``binaryData`` together; over the limit it is ``field.TooLong(field.NewPath(""),
cfg, core.MaxSecretSize)`` and a root path with an empty name renders as ``[]``:
k8s.io/apimachinery pkg/util/validation/field/path.go, Path.String), ValidateSecret
(``field.TooLong(dataPath, "", core.MaxSecretSize)``); pkg/apis/core/types.go
(MaxSecretSize = 1 MiB); field/errors.go v0.32 (TooLong's "may not be more than %d bytes").
"""

from __future__ import annotations

import base64

from tests.cluster.fidelity.builtin_server import Kube

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
MIB = 1024 * 1024
TOO_LONG = "Too long: may not be more than 1048576 bytes"


def _b64(size: int) -> str:
    return base64.b64encode(b"\0" * size).decode()


def test_a_config_map_over_one_mib_is_too_long_at_the_root(kube: Kube) -> None:
    status, answer = kube.call("POST", CONFIG_MAPS, {
        "metadata": {"name": "big"}, "data": {"a": "x" * (MIB // 2)},
        "binaryData": {"b": _b64(MIB // 2 + 1)}})
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    assert answer["details"]["causes"] == [
        {"reason": "FieldValueTooLong", "message": TOO_LONG, "field": "[]"}]
    assert answer["message"] == f'ConfigMap "big" is invalid: []: {TOO_LONG}'


def test_a_config_map_counts_bytes_not_characters(kube: Kube) -> None:
    """Go's ``len`` of a string is its UTF-8 length: 600,000 'é' are 1.2 MB."""
    assert kube.messages("POST", CONFIG_MAPS, {
        "metadata": {"name": "wide"}, "data": {"a": "é" * 600_000}}) == {"[]": [TOO_LONG]}


def test_a_config_map_of_exactly_one_mib_is_accepted(kube: Kube) -> None:
    status, body = kube.call("POST", CONFIG_MAPS, {
        "metadata": {"name": "full"}, "data": {"a": "x" * (MIB - 1)},
        "binaryData": {"b": _b64(1)}})
    assert status == 201, body.get("message")


def test_a_secret_over_one_mib_is_too_long_at_data(kube: Kube) -> None:
    status, answer = kube.call("POST", SECRETS, {
        "metadata": {"name": "big"}, "data": {"a": _b64(MIB), "b": _b64(1)}})
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    assert answer["details"]["causes"] == [
        {"reason": "FieldValueTooLong", "message": TOO_LONG, "field": "data"}]
    status, body = kube.call("POST", SECRETS, {"metadata": {"name": "full"},
                                               "stringData": {"a": "x" * MIB}})
    assert status == 201, body.get("message")
