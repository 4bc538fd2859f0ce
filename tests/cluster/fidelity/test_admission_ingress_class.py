"""DefaultIngressClass over real HTTP (plugin/pkg/admission/network/defaultingressclass/
admission.go): a classless Ingress gets the one default IngressClass; two defaults refuse the
create."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

INGRESSES = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
CLASSES = "/apis/networking.k8s.io/v1/ingressclasses"
DEFAULT = {"ingressclass.kubernetes.io/is-default-class": "true"}


def _ingress(name: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}


def _class(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": DEFAULT},
            "spec": {"controller": "example.com/ingress"}}


async def test_the_default_ingress_class_is_named_and_two_defaults_refuse(
        module_api: API) -> None:
    status, body = await module_api.post(INGRESSES, _ingress("none"))
    assert status == 201 and "ingressClassName" not in body["spec"]
    assert (await module_api.post(CLASSES, _class("first")))[0] == 201
    status, body = await module_api.post(INGRESSES, _ingress("defaulted"))
    assert status == 201 and body["spec"]["ingressClassName"] == "first"
    # the legacy annotation counts as a class
    status, body = await module_api.post(INGRESSES, _ingress(
        "annotated", annotations={"kubernetes.io/ingress.class": "nginx"}))
    assert status == 201 and "ingressClassName" not in body["spec"]
    assert (await module_api.post(CLASSES, _class("second")))[0] == 201
    status, body = await module_api.post(INGRESSES, _ingress("ambiguous"))
    assert (status, body["reason"], body["message"], body["details"]) == (
        403, "Forbidden", 'ingresses.networking.k8s.io "ambiguous" is forbidden: Internal '
        "error occurred: 2 default IngressClasses were found, only 1 allowed",
        {"name": "ambiguous", "group": "networking.k8s.io", "kind": "ingresses"})
    # a class named explicitly needs no default
    explicit = _ingress("explicit")
    explicit["spec"]["ingressClassName"] = "second"
    assert (await module_api.post(INGRESSES, explicit))[0] == 201
