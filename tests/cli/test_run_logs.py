"""``setpoint run --log-format json``: one JSON object a line, with the fields a log stack
indexes (time, level, logger, message, and controller, namespace, name, reconcileID as
controller-runtime's zap logger names them: pkg/internal/controller/controller.go)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from setpoint.client import Client
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import Waiter
from tests.cli.logging_target import Gadget, GadgetSpec

ROOT = Path(__file__).resolve().parents[2]


async def test_json_logs_are_one_object_a_line_with_the_reconcile_fields(
        setpoint_cluster: SetpointCluster, k8s: Client, wait_for: Waiter) -> None:
    await setpoint_cluster.install(Gadget)
    namespace = setpoint_cluster.namespace
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "setpoint.cli.main", "run", "tests.cli.logging_target:manager",
        "--kubeconfig", str(setpoint_cluster.kubeconfig), "--namespace", namespace,
        "--log-format", "json", "--log-level", "debug",
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await k8s.create(Gadget(name="g", spec=GadgetSpec(message="json")))
        await wait_for(Gadget, "g", lambda g: g.status.conditions, timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()

    lines = [json.loads(line) for line in err.decode().splitlines() if line.strip()]
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys(), line
        assert line["time"].endswith("Z")
    written = [x for x in lines if x["message"] == "object_written"]
    assert {(x["verb"], x["kind"]) for x in written} >= {("create", "ConfigMap"),
                                                        ("update_status", "Gadget")}
    for line in written:
        assert line["level"] == "debug" and line["logger"].startswith("setpoint.runtime")
        assert (line["controller"], line["namespace"], line["name"]) == \
            ("gadget", namespace, "g")
        assert len(line["reconcileID"]) == 12
    assert any(x["message"] == "reconciling" and x["level"] == "debug" for x in lines)
    assert any(x["message"] == "condition_changed" and x["type"] == "Ready" for x in lines)
