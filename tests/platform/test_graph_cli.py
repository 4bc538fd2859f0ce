"""``setpoint graph``: every output format, from a real process against the embedded cluster.

The png is drawn by Graphviz (the test checks the image and, with ``dot -Tplain`` on the
same DOT, the objects placed); the html page's own script is run under node with a small
DOM and the objects it draws are checked.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from setpoint.client import Client
from tests.conftest import kubectl_path
from tests.platform.stacks import obj, pod

EXPECTED = {"Service/default/web", "Pod/default/web-1", "Pod/default/web-2",
            "ConfigMap/default/settings",
            # every pod's admission-given ServiceAccount and its projected root CA
            "ServiceAccount/default/default", "ConfigMap/default/kube-root-ca.crt"}


async def _stack(k8s: Client) -> None:
    await k8s.create(obj("v1", "ConfigMap", "settings"))
    volume = [{"name": "c", "configMap": {"name": "settings"}}]
    await k8s.create(pod("web-1", {"app": "web"}, volumes=volume))
    await k8s.create(pod("web-2", {"app": "web"}))
    await k8s.create(pod("db-1", {"app": "db"}))
    await k8s.create(obj("v1", "Service", "web", spec={"selector": {"app": "web"},
                                                       "ports": [{"port": 80}]}))


async def _run(cluster: Any, *args: str) -> tuple[int, bytes, bytes]:
    # the embedded server answers on this test's event loop: wait for the process without
    # blocking it
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", *args,
        "--kubeconfig", str(cluster.kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out, err


async def _graph(cluster: Any, *args: str) -> bytes:
    code, out, err = await _run(cluster, "graph", *args)
    assert code == 0, err.decode()
    return out


async def test_tree_json_and_dot(setpoint_cluster: Any, k8s: Client) -> None:
    await _stack(k8s)
    tree = (await _graph(setpoint_cluster, "service", "web")).decode()
    assert tree.splitlines()[0] == "Service/default/web"
    assert "├─ [selector] Pod/default/web-1" in tree or "└─ [selector] Pod/default/web-1" in tree
    assert "[volume] ConfigMap/default/settings" in tree
    assert "db-1" not in tree

    data = json.loads(await _graph(setpoint_cluster, "Service", "web", "-o", "json"))
    assert {n["id"] for n in data["nodes"]} == EXPECTED
    assert {"source": "Service/default/web", "target": "Pod/default/web-2",
            "relation": "selector"} in data["edges"]

    dot = (await _graph(setpoint_cluster, "Service", "web", "-o", "dot")).decode()
    assert dot.startswith("digraph stack {")
    assert '"Service/default/web" -> "Pod/default/web-1" [label="selector"];' in dot


async def test_a_missing_object_is_an_error_naming_it(setpoint_cluster: Any) -> None:
    code, _, err = await _run(setpoint_cluster, "graph", "Service", "nope")
    assert code == 1
    assert 'Service "nope" not found in namespace "default"' in err.decode()


async def test_a_mistyped_kind_is_named_as_unknown_with_the_nearest(
        setpoint_cluster: Any) -> None:
    """A kind no stack can hold is not reported as its object missing: kubectl get says
    'the server doesn't have a resource type "..."' (k8s.io/kubectl/pkg/cmd/get), and the
    nearest kind is offered."""
    code, _, err = await _run(setpoint_cluster, "graph", "Deploymnt", "web")
    assert code == 1
    assert err.decode().strip() == ('Error: no resource type "Deploymnt" among the kinds a '
                                    "stack can hold: did you mean Deployment?")


async def test_png_is_drawn_by_graphviz(setpoint_cluster: Any, k8s: Client,
                                        tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz is not installed: apt-get install graphviz")
    await _stack(k8s)
    png = await _graph(setpoint_cluster, "Service", "web", "-o", "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width > 100 and height > 50
    dot = await _graph(setpoint_cluster, "Service", "web", "-o", "dot")
    placed = subprocess.run(["dot", "-Tplain"], input=dot, capture_output=True,
                            check=True, timeout=60).stdout.decode()
    drawn = {line.split(" ", 2)[1].strip('"') for line in placed.splitlines()
             if line.startswith("node ")}
    assert drawn == EXPECTED


async def test_html_is_self_contained_and_its_script_draws_every_object(
        setpoint_cluster: Any, k8s: Client, tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: apt-get install nodejs")
    await _stack(k8s)
    page = tmp_path / "stack.html"
    await _graph(setpoint_cluster, "Service", "web", "-o", "html", "-f", str(page))
    text = page.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        '"http://www.w3.org/2000/svg"', "")
    assert "https://" not in text and "<script src" not in text
    drawn = json.loads(subprocess.run(
        [node, str(Path(__file__).parent / "domshim.js"), str(page)],
        capture_output=True, check=True, timeout=60).stdout)
    assert {n["id"] for n in drawn["nodes"]} == EXPECTED
    web = next(n for n in drawn["nodes"] if n["id"] == "Service/default/web")
    assert web["text"] == ["Service", "default/web"]
    assert sorted(drawn["edges"]) == ["selector", "selector", "serviceAccount",
                                      "serviceAccount", "volume", "volume", "volume"]
    assert "<b>selector</b>" in drawn["details"] or "<b>volume</b>" in drawn["details"]


async def test_every_name_kubectl_get_accepts_names_the_kind(
        setpoint_cluster: Any, k8s: Client, tmp_path: Path) -> None:
    """Short names, plural and singular resource names, kinds, with group and version
    suffixes resolve from discovery as kubectl's do (k8s.io/cli-runtime/pkg/resource/
    builder.go mappingFor, k8s.io/client-go/restmapper/shortcut.go, k8s.io/apimachinery/
    pkg/api/meta/restmapper.go): what ``kubectl get X web`` finds, ``setpoint graph X web``
    graphs."""
    await k8s.create(obj("apps/v1", "Deployment", "web", spec={
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "c", "image": "x"}]}}}))
    await k8s.create(obj("v1", "Service", "web", spec={"selector": {"app": "web"},
                                                       "ports": [{"port": 80}]}))
    names = {"deploy": "Deployment", "deployments": "Deployment", "deployment": "Deployment",
             "Deployment": "Deployment", "deploy.apps": "Deployment",
             "deployments.apps": "Deployment", "deployments.v1.apps": "Deployment",
             "Deployment.v1.apps": "Deployment", "svc": "Service", "services": "Service"}
    for name, kind in names.items():
        kubectl = await asyncio.create_subprocess_exec(
            kubectl_path(), "--kubeconfig", str(setpoint_cluster.kubeconfig), "--cache-dir",
            str(tmp_path / "kubectl-cache"), "get", name, "web", "-o", "name",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(kubectl.communicate(), 60)
        assert kubectl.returncode == 0, (name, err.decode())
        assert out.decode().startswith(kind.lower()), (name, out)
        tree = (await _graph(setpoint_cluster, name, "web")).decode()
        assert tree.splitlines()[0] == f"{kind}/default/web", (name, tree)
