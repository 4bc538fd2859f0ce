"""The platform commands (``setpoint graph``, ``metrics``, ``check --cluster``) against a
cluster that cannot be reached or refuses the credentials: one line that says which and
what to do, as kubectl's (k8s.io/kubectl/pkg/cmd/util/helpers.go standardErrorMessage:
"The connection to the server HOST:PORT was refused - did you specify the right host or
port?", "You must be logged in to the server (Unauthorized)"), never a traceback."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from setpoint.testing import SetpointCluster

ROOT = Path(__file__).resolve().parents[2]


def setpoint(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "setpoint.cli.main", *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port this test holds without listening: connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def kubeconfig(path: Path, server: str, token: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("command", [["graph", "Deployment", "web"],
                                     ["metrics", "Deployment", "web"],
                                     ["check", "--cluster", "web"]])
def test_a_refused_connection_is_kubectls_one_line(
        command: list[str], refused_port: int, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{refused_port}", "t")
    result = setpoint(*command, "--kubeconfig", str(config))
    assert result.returncode == 1
    # one line, and no "Unclosed client session" from a request left retrying
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.rstrip().endswith(
        f"the connection to the server 127.0.0.1:{refused_port} was refused - did you "
        "specify the right host or port?"), result.stderr


async def test_rejected_credentials_are_not_an_object_not_found(
        setpoint_cluster: SetpointCluster, tmp_path: Path) -> None:
    """Every list answered 401 used to read as "no objects of this kind": "Deployment "web"
    not found"."""
    document = yaml.safe_load(setpoint_cluster.kubeconfig.read_text())
    document["users"][0]["user"] = {"token": "not-a-token"}
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump(document))
    config.chmod(0o600)
    server = document["clusters"][0]["cluster"]["server"]
    user, context = document["users"][0]["name"], document["current-context"]
    # the embedded cluster answers from this test's event loop: the command runs beside it
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "graph", "Deployment", "web",
        "--kubeconfig", str(config), cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    stderr = err.decode()
    assert proc.returncode == 1
    assert stderr.strip().count("\n") == 0, stderr
    assert stderr.startswith(
        f"Error: You must be logged in to the server (Unauthorized): {server} does not "
        f'accept the credentials of user "{user}" (kubeconfig context "{context}"): renew '
        "them or use another kubeconfig"), stderr


@pytest.mark.parametrize("command", [["pod", "delay-readiness", "web", "5s"],
                                     ["node", "cordon", "n1"]])
async def test_workload_commands_say_kubectls_unauthorized_naming_who(
        command: list[str], setpoint_cluster: SetpointCluster, tmp_path: Path) -> None:
    """``setpoint pod``/``node`` with rejected credentials said only "error: Unauthorized";
    they now say kubectl's words (k8s.io/kubectl/pkg/cmd/util/helpers.go
    standardErrorMessage) with the server, user and context, as the platform commands do."""
    document = yaml.safe_load(setpoint_cluster.kubeconfig.read_text())
    document["users"][0]["user"] = {"token": "not-a-token"}
    config = tmp_path / "kubeconfig"
    config.write_text(yaml.safe_dump(document))
    config.chmod(0o600)
    server = document["clusters"][0]["cluster"]["server"]
    user, context = document["users"][0]["name"], document["current-context"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", *command, "--kubeconfig", str(config),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    stderr = err.decode()
    assert proc.returncode == 1
    assert stderr.strip() == (
        f"error: You must be logged in to the server (Unauthorized): {server} does not "
        f'accept the credentials of user "{user}" (kubeconfig context "{context}"): renew '
        "them or use another kubeconfig"), stderr
