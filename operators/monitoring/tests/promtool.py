"""``promtool test rules`` for the operators' alerting rules: synthetic series in, the
alerts expected at given times out (Prometheus' own rule unit tests).

promtool is part of the ``prometheus`` package (``apt-get install -y prometheus``); the
tests that use it are skipped where it is missing, and CI installs it
(``make process-runtime-deps``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="promtool missing: apt-get install -y prometheus")

AlertCheck = tuple[str, str, list[dict[str, Any]]]
"""``(eval_time, alertname, expected alerts)``: promtool's ``alert_rule_test`` entry."""


def promtool_test_rules(tmp_path: Path, groups: list[dict[str, Any]], series: list[tuple[str, str]],
               checks: list[AlertCheck], *, interval: str = "1m",
               evaluation_interval: str = "1m", timeout: float = 300) -> None:
    """Runs ``groups`` under promtool with ``series`` (``(series, values)`` in promtool's
    expanding notation, one sample per ``interval``) and fails with promtool's report
    unless every check holds."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": groups}))
    test = {"rule_files": [str(rules)], "evaluation_interval": evaluation_interval,
            "tests": [{"interval": interval,
                       "input_series": [{"series": s, "values": v} for s, v in series],
                       "alert_rule_test": [{"eval_time": at, "alertname": name,
                                            "exp_alerts": expected}
                                           for at, name, expected in checks]}]}
    path = tmp_path / "test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    result = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True,
                            text=True, check=False, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr

