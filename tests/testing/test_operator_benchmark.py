"""The operator benchmark runs end to end (slow: run with ``pytest -m slow``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_benchmark_reports_every_contender_and_two_requests_per_widget(
        tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "bench/operator.py", "--quick", "--idle", "1",
         "--json", str(tmp_path / "results.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=True).stdout
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| |")}
    assert set(rows) == {"setpoint", "kopf", "floor"}, out
    create, update, idle = (float(cell) for cell in rows["setpoint"][8:11])
    assert create <= 2.05, out  # 2 per Widget, plus one-off discovery
    assert (update, idle) == (2.0, 0.0), out
