"""ComponentStatus: the one deprecated kind a 1.32 apiserver serves by default.

k8s.io/apiserver v0.32.0 pkg/endpoints/installer.go adds deprecation.WarningMessage (k8s.io/api
core/v1 lifecycle.go: deprecated in 1.19) to every route of the kind (AddWarningsHandler);
pkg/registry/core/componentstatus/rest.go is a TableConvertor (printers.go
printComponentStatus: Name, Status, Message, Error).
"""

from __future__ import annotations

from typing import Any

import orjson

from tests.cluster.conftest import API

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
WARNING = '299 - "v1 ComponentStatus is deprecated in v1.19+"'


async def _get(api: API, path: str, accept: str = "application/json"
               ) -> tuple[int, list[str], Any]:
    async with api.session.get(api.cluster.url + path, ssl=api.ssl,
                               headers={"Accept": accept}) as resp:
        return resp.status, resp.headers.getall("Warning", []), orjson.loads(await resp.read())


async def test_every_answer_warns_of_the_deprecation(api: API) -> None:
    for path, code in (("/api/v1/componentstatuses", 200),
                       ("/api/v1/componentstatuses/scheduler", 200),
                       ("/api/v1/componentstatuses/nope", 404)):
        status, warnings, _ = await _get(api, path)
        assert (status, warnings) == (code, [WARNING]), path


async def test_a_table_of_component_statuses(api: API) -> None:
    status, _, table = await _get(api, "/api/v1/componentstatuses", TABLE)
    assert (status, table["kind"]) == (200, "Table")
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Status", "Message", "Error"]
    # (the storage asks each component at once: the order is not promised)
    assert sorted(row["cells"][:2] for row in table["rows"]) == [
        ["controller-manager", "Healthy"], ["etcd-0", "Healthy"], ["scheduler", "Healthy"]]
    status, _, one = await _get(api, "/api/v1/componentstatuses/etcd-0", TABLE)
    assert (status, [row["cells"][0] for row in one["rows"]]) == (200, ["etcd-0"])
