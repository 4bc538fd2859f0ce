"""Content negotiation as NegotiateMediaTypeOptions does it (apiserver pkg/endpoints/handlers/
negotiation/negotiate.go, with handlers/rest.go RequestScope.AllowsMediaTypeTransform): the
clauses in goautoneg's order, each tried with every serializer it matches, its parameters
checked by acceptMediaTypeOptions; a Table has no protobuf form (response.go
targetEncodingForTransform), so such a clause is passed over and, with nothing else
acceptable, the request is a 406."""

from __future__ import annotations

import pytest

from setpoint.cluster.endpoints.negotiation import (
    negotiate,
    negotiate_discovery,
    negotiate_error,
)
from setpoint.machinery.errors import StatusError

TABLE = "as=Table;v=v1;g=meta.k8s.io"


@pytest.mark.parametrize(("accept", "answer"), [
    ("application/yaml;q=0.5, application/json", ("application/json", "")),
    ("application/json;q=0.4, application/yaml;q=0.8", ("application/yaml", "")),
    ("*/*;q=1, application/yaml;q=0.9", ("application/yaml", "")),
    (f"application/vnd.kubernetes.protobuf;{TABLE}, application/json;{TABLE}",
     ("application/json", "Table")),
    (f"application/vnd.kubernetes.protobuf;{TABLE}, application/vnd.kubernetes.protobuf",
     ("application/vnd.kubernetes.protobuf", "")),
    (f"*/*;{TABLE}", ("application/json", "Table")),
    ("application/json;q=0", ("application/json", "")),
    ("application/json;stream=watch", ("application/json", "")),
    ("application/json;sv=v2, application/yaml", ("application/yaml", "")),
    ("application/json;sv=v1", ("application/json", "")),
])
def test_a_resource_answers_the_best_acceptable_clause(accept: str,
                                                        answer: tuple[str, str]) -> None:
    media = negotiate(accept, protobuf=True)
    assert (media.type, media.as_kind) == answer


@pytest.mark.parametrize("accept", [
    f"application/vnd.kubernetes.protobuf;{TABLE}",
    "application/json;g=meta.k8s.io;v=v1",  # g/v without as: a conversion to Kind ""
    "application/json;stream=lines",
    "application/yaml;stream=watch",  # YAML has no stream serializer
])
def test_nothing_acceptable_is_a_406(accept: str) -> None:
    with pytest.raises(StatusError) as caught:
        negotiate(accept, protobuf=True)
    assert caught.value.code == 406
    assert str(caught.value.message) == ("only the following media types are accepted: "
                                         "application/json, application/yaml, "
                                         "application/vnd.kubernetes.protobuf")


def test_a_custom_resource_passes_plain_protobuf_over() -> None:
    assert negotiate("application/vnd.kubernetes.protobuf, application/yaml;q=0.1",
                     protobuf=False).type == "application/yaml"


def test_an_error_status_follows_q_and_skips_conversions() -> None:
    assert negotiate_error("application/json;q=0.1, application/yaml").type == \
        "application/yaml"
    assert negotiate_error(f"application/yaml;{TABLE}").type == "application/json"


def test_discovery_takes_an_aggregated_clause_whatever_its_q() -> None:
    aggregated = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;"
                  "q=0.1, application/json")
    assert negotiate_discovery(aggregated, aggregated=True).as_kind == "APIGroupDiscoveryList"
    assert negotiate_discovery(aggregated, aggregated=False).as_kind == ""
    assert negotiate_discovery("application/json;q=0.2, application/yaml",
                               aggregated=False).type == "application/yaml"


def test_discovery_documents_come_in_every_serializer() -> None:
    protobuf = "application/vnd.kubernetes.protobuf"
    assert negotiate_discovery(f"{protobuf}, application/json;q=0.9",
                               aggregated=False).type == protobuf
    media = negotiate_discovery(
        f"{protobuf};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", aggregated=True)
    assert media.content_type == \
        f"{protobuf};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    with pytest.raises(StatusError):
        negotiate_discovery(f"{protobuf};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                            aggregated=False)
