"""The guides' examples run: the Python blocks of each guide, in order, are one test
module, run by pytest with the Setpoint plugin as a user's project would run them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = ["docs/reconciling.md", "docs/testing.md"]


def python_blocks(markdown: str) -> str:
    return "\n\n".join(re.findall(r"^```python\n(.*?)^```", markdown, re.M | re.S))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("guide", GUIDES)
def test_the_guide_runs(guide: str, tmp_path: Path) -> None:
    module = tmp_path / f"test_{Path(guide).stem}_guide.py"
    module.write_text(python_blocks((ROOT / guide).read_text()))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-o", "asyncio_mode=auto", "--rootdir", str(tmp_path), str(module)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=280)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
