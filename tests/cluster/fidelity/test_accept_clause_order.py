"""The order of an Accept header's clauses decides the answer's media type, as kube-apiserver
1.32's negotiation takes them: k8s.io/apiserver pkg/endpoints/handlers/negotiation
(NegotiateOutputMediaType walks ``goautoneg.ParseAccept`` in order and takes the first clause
a serializer matches), github.com/munnerz/goautoneg a7dc8b61c822 ParseAccept (``sort.Sort``
with a Less that is no strict weak order), and Go 1.23's sort.Sort: insertion sort up to 12
elements, pdqsort beyond (src/sort/zsortinterface.go). A q=0.5 YAML clause before */*
clauses sinks behind them under insertion sort, and stays first under pdqsort with 13
(traced in tests/machinery/test_acceptheader.py::test_past_twelve_clauses_are_pdqsorted).
"""

from __future__ import annotations

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _content_type(api: API, clauses: int) -> str:
    accept = ",".join(["application/yaml;q=0.5"] + ["*/*"] * (clauses - 1))
    async with api.session.get(f"{api.cluster.url}/api/v1/namespaces/default",
                               headers={"Accept": accept}, ssl=api.ssl) as resp:
        assert resp.status == 200, await resp.text()
        return resp.content_type


async def test_twelve_clauses_put_the_wildcard_first(module_api: API) -> None:
    """Insertion sort: every */* (q 1) is Less than the q=0.5 clause and passes it."""
    assert await _content_type(module_api, 12) == "application/json"


async def test_thirteen_clauses_keep_the_yaml_clause_first(module_api: API) -> None:
    """pdqsort's partition brings the YAML clause back to the front: YAML is served."""
    assert await _content_type(module_api, 13) == "application/yaml"


async def test_q_values_equal_in_float32_keep_their_order(module_api: API) -> None:
    """goautoneg ParseAccept reads q with ``strconv.ParseFloat(s, 32)``: 0.3 and 0.30000001
    are the same float32, so YAML, listed first, is served (a float64 q would put JSON,
    its q higher, first)."""
    async with module_api.session.get(
            f"{module_api.cluster.url}/api/v1/namespaces/default",
            headers={"Accept": "application/yaml;q=0.3, application/json;q=0.30000001"},
            ssl=module_api.ssl) as resp:
        assert resp.status == 200
        assert resp.content_type == "application/yaml"
