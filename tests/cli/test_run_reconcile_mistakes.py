"""``setpoint run`` on a controller whose reconcile function is not ``async def
reconcile(ctx, obj)``, or that has none: one line naming the function, where it is, and the
declaration to write, exit status non-zero, no traceback. Before, a wrong signature only
showed at the first reconcile (a retried error in the log) and a missing one as a
traceback. No cluster is needed: the mistakes are found before any request."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

HEADER = """from examples.widget.api import Widget
from setpoint.runtime import Controller, Manager

widgets = Controller.for_(Widget, name="w")
"""


def run_target(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "my_operator.py").write_text(HEADER + body + "\nmanager = Manager([widgets])\n")
    with socket.socket() as s:  # held, not listening: nothing answers
        s.bind(("127.0.0.1", 0))
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {
                "server": f"http://127.0.0.1:{s.getsockname()[1]}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
        kubeconfig.chmod(0o600)
        return subprocess.run(
            [sys.executable, "-m", "setpoint.cli.main", "run", "my_operator:manager",
             "--kubeconfig", str(kubeconfig)], cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
            timeout=60)


@pytest.mark.parametrize(("body", "message"), [
    ("@widgets.reconcile\nasync def reconcile(widget):\n    pass\n",
     "Error: reconcile function reconcile(widget) ({path}:5) cannot be called with "
     "(ctx, obj): declare it `async def reconcile(ctx, obj)`"),
    ("@widgets.reconcile\ndef reconcile(ctx, widget):\n    pass\n",
     "Error: reconcile function reconcile ({path}:5) is not async: declare it `async def "
     "reconcile(ctx, obj)` (the controller awaits it)"),
    ("", "error: controller 'w' has no reconcile function: decorate `async def "
         "reconcile(ctx, obj)` with @<controller>.reconcile"),
], ids=["wrong-parameters", "not-async", "none"])
def test_a_reconcile_mistake_is_one_line(tmp_path: Path, body: str, message: str) -> None:
    result = run_target(tmp_path, body)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message.format(path=tmp_path / "my_operator.py")), lines[0]
