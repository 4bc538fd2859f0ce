"""``setpoint cluster up`` as users run it: a process, a kubeconfig, signals, persistence."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.support import ServerProcess


def request(server: ServerProcess, method: str, path: str, body: dict[str, Any] | None = None
            ) -> tuple[int, dict]:  # type: ignore[type-arg]
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data, method=method, headers={
        "Authorization": f"Bearer {server.token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=server.ssl_context(), timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_kubeconfig_names_the_port_it_picked(tmp_path: Path) -> None:
    with ServerProcess(tmp_path) as server:
        assert server.url.startswith("https://127.0.0.1:")
        assert not server.url.endswith(":0")
        status, body = request(server, "GET", "/api/v1/namespaces/default")
        assert status == 200 and body["metadata"]["name"] == "default"


def test_sigterm_stops_the_server_cleanly(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path).__enter__()
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=10) == 0
    server.stop()


def test_state_survives_a_crash_with_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServerProcess(tmp_path / "one", data=data) as server:
        status, created = request(server, "POST", "/api/v1/namespaces/default/configmaps",
                                  {"metadata": {"name": "kept"}, "data": {"a": "1"}})
        assert status == 201
        assert server.proc is not None
        server.proc.kill()  # no chance to flush anything: acknowledged writes must be on disk
        server.proc.wait()
    with ServerProcess(tmp_path / "two", data=data) as server:
        status, body = request(server, "GET", "/api/v1/namespaces/default/configmaps/kept")
        assert status == 200
        assert body["data"] == {"a": "1"}
        assert body["metadata"]["uid"] == created["metadata"]["uid"]
        status, again = request(server, "POST", "/api/v1/namespaces/default/configmaps",
                                {"metadata": {"name": "next"}})
        assert int(again["metadata"]["resourceVersion"]) > int(
            created["metadata"]["resourceVersion"])


def test_data_and_memory_together_are_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--data",
         str(tmp_path)], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2
    assert "--data and --memory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    # the first server only holds the port: its workloads would only add start-up time
    with ServerProcess(tmp_path / "first", "--no-workloads") as server:
        port = server.url.rsplit(":", 1)[1]
        proc = subprocess.run(
            [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port",
             port, "--kubeconfig", str(tmp_path / "kc2")],
            capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode == 1
        assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
        assert "Traceback" not in proc.stderr
