"""Ctrl+C while ``setpoint run`` starts (before its Manager handles signals: here, while the
user's module is imported) stops it silently with exit status 130 (128 + SIGINT), as a Go
program under the default SIGINT disposition (controller-runtime's manager before
``signals.SetupSignalHandler``, pkg/manager/signals/signal.go) and as a shell expects of an
interrupted command; it printed click's "Aborted!" and exited 1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SLOW_MODULE = """\
import threading

print("importing slow_operator", flush=True)
threading.Event().wait()  # a start that takes long: a connection, a big model ...
"""


def test_ctrl_c_while_the_users_module_imports_exits_130_quietly(tmp_path: Path) -> None:
    (tmp_path / "slow_operator.py").write_text(SLOW_MODULE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "run", "slow_operator:manager"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "importing slow_operator\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out, err) == (130, "", "")
