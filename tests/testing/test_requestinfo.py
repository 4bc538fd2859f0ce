"""Requests read in Kubernetes terms, as the apiserver's RequestInfoFactory reads them."""

from __future__ import annotations

import pytest

from setpoint.testing import request_info


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    ("GET", "/api/v1/namespaces/default/configmaps", {}, ("list", "configmaps", "default", "")),
    ("GET", "/api/v1/namespaces/default/configmaps", {"watch": "true"},
     ("watch", "configmaps", "default", "")),
    ("GET", "/api/v1/namespaces/default/configmaps/c", {}, ("get", "configmaps", "default", "c")),
    # the parameter codec's bools (Convert_Slice_string_To_bool): only "0"/"false" are false
    ("GET", "/api/v1/namespaces/default/configmaps", {"watch": "yes"},
     ("watch", "configmaps", "default", "")),
    ("GET", "/api/v1/namespaces/default/configmaps", {"watch": "False"},
     ("list", "configmaps", "default", "")),
    # NewRequestInfo reads `watch` only for a collection: a named GET stays a get
    ("GET", "/api/v1/namespaces/default/configmaps/c", {"watch": "true"},
     ("get", "configmaps", "default", "c")),
    ("POST", "/api/v1/namespaces/default/configmaps", {}, ("create", "configmaps", "default", "")),
    ("PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", {},
     ("update", "deployments/scale", "ns", "d")),
    ("PATCH", "/apis/bench.setpoint.dev/v1/namespaces/ns/widgets/w/status", {},
     ("patch", "widgets/status", "ns", "w")),
    ("DELETE", "/api/v1/namespaces/ns/pods", {}, ("deletecollection", "pods", "ns", "")),
    ("DELETE", "/api/v1/namespaces/ns", {}, ("delete", "namespaces", "ns", "ns")),
    ("PUT", "/api/v1/namespaces/ns/finalize", {}, ("update", "namespaces/finalize", "ns", "ns")),
    ("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {},
     ("list", "customresourcedefinitions", "", "")),
])
def test_requests_are_read_as_verb_resource_namespace_and_name(
        method: str, path: str, query: dict[str, str],
        expected: tuple[str, str, str, str]) -> None:
    info = request_info(method, path, query)
    assert (info.verb, info.full_resource, info.namespace, info.name) == expected


def test_non_resource_paths_have_no_resource() -> None:
    info = request_info("GET", "/version", {})
    assert (info.verb, info.resource) == ("get", "")
    assert request_info("GET", "/apis/apps/v1", {}).resource == ""
