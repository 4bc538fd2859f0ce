"""The shared conformance corpus, recorded from a real kube-apiserver, replayed against ours.

One embedded server (``setpoint cluster up`` in its own process, as users run it) serves
every scenario; each scenario then passes or fails on its own.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SHARED, kubectl_path
from tests.support import ServerProcess

CONFORMANCE = SHARED / "conformance"
SCENARIOS = sorted(p.stem for p in (CONFORMANCE / "scenarios").glob("*.yaml"))

pytestmark = [
    pytest.mark.skipif(not CONFORMANCE.exists(), reason="shared/ is not beside the repo"),
    pytest.mark.timeout(900),  # the recording runs every scenario, watch timeouts included
]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("conformance")
    out = work / "out"
    with ServerProcess(work / "server") as server:
        proc = subprocess.run(
            [sys.executable, str(CONFORMANCE / "record.py"), str(server.kubeconfig),
             str(CONFORMANCE / "scenarios"), str(out), "--kubectl", kubectl_path(),
             "--settle-timeout", "5"],
            capture_output=True, text=True, timeout=900, check=False,
        )
        (work / "record.log").write_text(proc.stdout + proc.stderr)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    yield out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_matches_real_apiserver(recording: Path, scenario: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(CONFORMANCE / "compare.py"), "-v", str(CONFORMANCE / "golden"),
         str(recording), "--only", scenario],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
