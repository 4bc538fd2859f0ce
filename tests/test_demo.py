"""``make demo`` and ``make demo-real`` run to the end and show what they promise.

Each runs as users run it: ``python -m setpoint.demo`` (``setpoint.demo_real``) from the
repository, in its own temporary directory with its own kubeconfig and kubectl cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]


def run_demo(module: str, tmp_path: Path) -> str:
    env = {**os.environ, "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([sys.executable, "-m", module], cwd=REPOSITORY, env=env,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


@pytest.mark.timeout(300)
def test_make_demo_converges_scales_and_stops(tmp_path: Path) -> None:
    out = run_demo("setpoint.demo", tmp_path)
    assert "Available:" in out
    assert "Scaling to 5" in out
    assert "cluster stopped (exit 0)" in out
    assert not list(tmp_path.glob("setpoint-demo-*")), "the demo left its directory behind"


@pytest.mark.timeout(300)
def test_make_demo_real_spreads_keys_scales_and_survives_a_killed_replica(
        tmp_path: Path) -> None:
    if shutil.which("memcached") is None:
        pytest.skip("memcached is not installed: apt-get update && apt-get install -y "
                    "memcached")
    out = run_demo("setpoint.demo_real", tmp_path)
    assert f"got {90} of {90} keys back through the proxy" in out
    assert "the new backend demo-memcached-3 received" in out
    assert "the operator routes around it" in out
    assert "got 45 of 45 keys back through the proxy" in out
    assert "cluster stopped (exit 0)" in out
