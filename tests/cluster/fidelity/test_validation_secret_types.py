"""The keys each built-in Secret type requires, over HTTP, with kube-apiserver 1.32's causes.

Source: pkg/apis/core/validation/validation.go ValidateSecret (the switch on secret.Type:
service-account-token needs the service-account.name annotation; dockercfg and
dockerconfigjson their key holding a JSON object; basic-auth a username or a password;
ssh-auth a non-empty private key; tls both tls.crt and tls.key), as
pkg/registry/core/secret/strategy.go calls it after stringData is merged into data.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube

SECRETS = "/api/v1/namespaces/default/secrets"

CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("sa-token", {"type": "kubernetes.io/service-account-token"}, [
        ("metadata.annotations[kubernetes.io/service-account.name]", "FieldValueRequired",
         "Required value")]),
    ("dockercfg", {"type": "kubernetes.io/dockercfg", "stringData": {"x": "y"}}, [
        ("data[.dockercfg]", "FieldValueRequired", "Required value")]),
    ("dockercfg-array", {"type": "kubernetes.io/dockercfg",
                         "stringData": {".dockercfg": "[]"}}, [
        ("data[.dockercfg]", "FieldValueInvalid",
         'Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go '
         "value of type map[string]interface {}")]),
    ("basic-auth", {"type": "kubernetes.io/basic-auth", "stringData": {"user": "u"}}, [
        ("data[username]", "FieldValueRequired", "Required value"),
        ("data[password]", "FieldValueRequired", "Required value")]),
    ("ssh-auth", {"type": "kubernetes.io/ssh-auth", "stringData": {"ssh-privatekey": ""}}, [
        ("data[ssh-privatekey]", "FieldValueRequired", "Required value")]),
    ("tls-half", {"type": "kubernetes.io/tls", "stringData": {"tls.crt": "c"}}, [
        ("data[tls.key]", "FieldValueRequired", "Required value")]),
]


@pytest.mark.parametrize(("name", "fields", "expected"), CASES, ids=[c[0] for c in CASES])
def test_secret_type_requires_its_keys(kube: Kube, name: str, fields: dict[str, Any],
                                       expected: list[tuple[str, str, str]]) -> None:
    status, answer = kube.call("POST", SECRETS, {"metadata": {"name": f"s-{name}"}, **fields})
    assert (status, answer.get("reason")) == (422, "Invalid"), answer
    assert [(c["field"], c["reason"], c["message"])
            for c in answer["details"]["causes"]] == expected


@pytest.mark.parametrize(("name", "fields"), [
    ("basic-auth-password-only", {"type": "kubernetes.io/basic-auth",
                                  "stringData": {"password": ""}}),
    ("tls-empty-values", {"type": "kubernetes.io/tls",
                          "stringData": {"tls.crt": "", "tls.key": ""}}),
    ("custom-type", {"type": "example.com/custom"}),
])
def test_secret_type_accepts_what_go_accepts(kube: Kube, name: str,
                                             fields: dict[str, Any]) -> None:
    status, answer = kube.call("POST", SECRETS, {"metadata": {"name": name}, **fields})
    assert status == 201, answer
    kube.call("DELETE", f"{SECRETS}/{name}")
