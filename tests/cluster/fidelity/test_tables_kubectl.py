"""Built-in kinds' Tables over real HTTP and through real ``kubectl get`` / ``-o wide``:
the cells of kube-apiserver 1.32's pkg/printers/internalversion/printers.go, the Table
framing of k8s.io/apiserver pkg/endpoints/handlers/response.go (asTable) and watch.go
(a Table per watch event, column definitions only on the first)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def _table(api: API, path: str) -> dict[str, Any]:
    status, out = await api.get(path, headers={"Accept": TABLE})
    assert status == 200, out
    assert isinstance(out, dict)
    return out


def _rows(out: str) -> dict[str, list[str]]:
    """kubectl's columns by the row's first cell (its NAME)."""
    lines = out.splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]}


async def test_cronjob_suspend_prints_as_false(module_api: API, module_kubectl: Kubectl) -> None:
    """printCronJob: SUSPEND through printBoolPtr, the text ``False``, in the Table and in
    ``kubectl get``."""
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 1 * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    status, out = await module_api.post("/apis/batch/v1/namespaces/default/cronjobs", cron)
    assert status == 201, out
    table = await _table(module_api, "/apis/batch/v1/namespaces/default/cronjobs/nightly")
    assert table["rows"][0]["cells"][:6] == ["nightly", "0 1 * * *", "<none>", "False", 0,
                                             "<none>"]
    code, printed, err = await module_kubectl("get", "cronjobs", "nightly")
    assert code == 0, err
    assert printed.split()[:6] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE",
                                   "LAST"]
    assert _rows(printed)["nightly"][1:8] == ["0", "1", "*", "*", "*", "<none>", "False"]


async def test_services_wide(module_api: API, module_kubectl: Kubectl) -> None:
    """printService: NodePort ports ``port:nodePort/TCP``; a LoadBalancer without addresses
    ``<pending>``; the selector in ``-o wide`` (labels.FormatLabels)."""
    for name, spec in (("web", {"type": "NodePort", "selector": {"app": "web"}, "ports": [
            {"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 30001}]}),
                       ("lb", {"type": "LoadBalancer", "ports": [{"port": 8080}]})):
        status, out = await module_api.post(f"{NS}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
        assert status == 201, out
    code, printed, err = await module_kubectl("get", "services", "web", "lb", "-o", "wide")
    assert code == 0, err
    rows = _rows(printed)
    web, lb = rows["web"], rows["lb"]
    assert (web[1], web[3]) == ("NodePort", "<none>")
    assert web[4].startswith("80:3") and web[4].endswith(",443:30001/TCP"), web
    assert web[-1] == "app=web"
    assert (lb[1], lb[3], lb[-1]) == ("LoadBalancer", "<pending>", "<none>")


async def test_nodes_roles_and_scheduling_disabled(module_api: API,
                                                   module_kubectl: Kubectl) -> None:
    """printNode: STATUS ``Unknown,SchedulingDisabled`` without a Ready condition; ROLES
    findNodeRoles' sorted set; wide columns ``<none>``/``<unknown>``."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "tables-n1", "labels": {
        "node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "",
        "kubernetes.io/role": "worker"}}, "spec": {"unschedulable": True}}
    status, out = await module_api.post("/api/v1/nodes", node)
    assert status == 201, out
    code, printed, err = await module_kubectl("get", "nodes", "tables-n1", "-o", "wide")
    assert code == 0, err
    row = _rows(printed)["tables-n1"]
    assert row[1:3] == ["Unknown,SchedulingDisabled", "control-plane,worker"]
    assert row[-5:] == ["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]


async def test_ingress_hosts_through_kubectl(module_api: API, module_kubectl: Kubectl) -> None:
    """formatHosts: three hosts then ``+ N more...``; printIngress: CLASS ``<none>``."""
    rules = [{"host": f"h{i}.example.com"} for i in range(5)]
    status, out = await module_api.post(
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "many"},
         "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}},
                  "rules": rules}})
    assert status == 201, out
    code, printed, err = await module_kubectl("get", "ingress", "many")
    assert code == 0, err
    line = printed.splitlines()[1]
    assert "h0.example.com,h1.example.com,h2.example.com + 2 more..." in line
    assert line.split()[1] == "<none>"


async def test_table_watch_rows_per_event(module_api: API) -> None:
    """watch.go with as=Table: each event's object is a one-row Table; only the first
    carries columnDefinitions (the rest null)."""
    status, listed = await module_api.get(f"{NS}/configmaps")
    assert status == 200
    rv = listed["metadata"]["resourceVersion"]
    for name in ("w1", "w2"):
        status, out = await module_api.post(f"{NS}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"a": "b"}})
        assert status == 201, out
    url = (f"{module_api.cluster.url}{NS}/configmaps?watch=1&timeoutSeconds=1"
           f"&resourceVersion={rv}")
    async with module_api.session.get(url, ssl=module_api.ssl,
                                      headers={"Accept": TABLE}) as resp:
        events = [orjson.loads(line) for line in (await resp.text()).splitlines()]
    tables = [e["object"] for e in events if e["type"] == "ADDED"]
    assert [t["rows"][0]["cells"][:2] for t in tables] == [["w1", 1], ["w2", 1]]
    assert tables[0]["columnDefinitions"][1]["name"] == "Data"
    assert tables[1]["columnDefinitions"] is None
    assert tables[0]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


async def test_flow_schema_table_rows_follow_precedence(module_api: API) -> None:
    """printFlowSchemaList sorts the page by FlowSchemaSequence (matchingPrecedence, then
    name), unlike every other list printer."""
    path = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
    for name, precedence in (("tables-b", 9000), ("tables-a", 9500), ("tables-c", 9000)):
        status, out = await module_api.post(path, {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name}, "spec": {
                "priorityLevelConfiguration": {"name": "global-default"},
                "matchingPrecedence": precedence}})
        assert status == 201, out
    table = await _table(module_api, path)
    mine = [row["cells"][:3] for row in table["rows"] if row["cells"][0].startswith("tables-")]
    assert mine == [["tables-b", "global-default", 9000], ["tables-c", "global-default", 9000],
                    ["tables-a", "global-default", 9500]]


async def test_pod_status_cells_through_kubectl(module_api: API,
                                                module_kubectl: Kubectl) -> None:
    """printPod over a status written through pods/status: ``Init:0/1`` while the init
    container runs; then READY ``1/2``, STATUS the waiting reason of the last container,
    RESTARTS ``3 (Nm ago)``, READINESS GATES ``0/1``."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tables-pod"},
           "spec": {"initContainers": [{"name": "init", "image": "busybox"}],
                    "containers": [{"name": "a", "image": "nginx"},
                                   {"name": "b", "image": "nginx"}],
                    "readinessGates": [{"conditionType": "example.com/gate"}]}}
    status, created = await module_api.post(f"{NS}/pods", pod)
    assert status == 201, created
    running = {"running": {"startedAt": "2024-01-01T00:00:00Z"}}
    created["status"] = {"phase": "Pending", "initContainerStatuses": [
        {"name": "init", "image": "busybox", "imageID": "", "ready": False,
         "restartCount": 0, "state": running}]}
    status, out = await module_api.put(f"{NS}/pods/tables-pod/status", created)
    assert status == 200, out
    code, printed, err = await module_kubectl("get", "pods", "tables-pod")
    assert code == 0, err
    assert _rows(printed)["tables-pod"][1:4] == ["0/2", "Init:0/1", "0"]
    out["status"] = {"phase": "Running", "podIP": "10.1.2.3", "podIPs": [{"ip": "10.1.2.3"}],
                     "conditions": [{"type": "Initialized", "status": "True"}],
                     "initContainerStatuses": [
        {"name": "init", "image": "busybox", "imageID": "", "ready": True, "restartCount": 0,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                     "containerStatuses": [
        {"name": "a", "image": "nginx", "imageID": "", "ready": True, "restartCount": 3,
         "state": running, "lastState": {"terminated": {
             "exitCode": 1, "finishedAt": "2024-01-01T00:00:00Z"}}},
        {"name": "b", "image": "nginx", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}
    status, out = await module_api.put(f"{NS}/pods/tables-pod/status", out)
    assert status == 200, out
    code, printed, err = await module_kubectl("get", "pods", "tables-pod", "-o", "wide")
    assert code == 0, err
    row = _rows(printed)["tables-pod"]
    assert row[1:3] == ["1/2", "ImagePullBackOff"]
    assert row[3] == "3" and row[4].startswith("(") and row[5] == "ago)", row
    assert (row[7], row[-1]) == ("10.1.2.3", "0/1")
