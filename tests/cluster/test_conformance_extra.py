"""The repository's own scenarios (tests/conformance_extra), in the shared corpus's format,
recorded against the embedded server with the corpus's record.py.

They have no golden recording from a real kube-apiserver yet (the lead records them with the
corpus's workflow); until then each one checks itself: every ``expect`` status and every
``poll`` condition (``until``) must hold, which record.py reports as a WARN line. Their notes
cite the Go sources each expectation comes from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED, kubectl_path
from tests.support import ServerProcess

CONFORMANCE = SHARED / "conformance"
EXTRA = Path(__file__).resolve().parents[1] / "conformance_extra"

pytestmark = [
    pytest.mark.skipif(not CONFORMANCE.exists(), reason="shared/ is not beside the repo"),
    pytest.mark.timeout(300),
]


def test_extra_scenarios_hold_on_the_embedded_server(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ServerProcess(tmp_path / "server", "--no-workloads") as server:
        proc = subprocess.run(
            [sys.executable, str(CONFORMANCE / "record.py"), str(server.kubeconfig),
             str(EXTRA), str(out), "--kubectl", kubectl_path(), "--settle-timeout", "5"],
            capture_output=True, text=True, timeout=240, check=False,
        )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "WARN" not in log, log[-3000:]
    recorded = {p.stem for p in out.glob("*.json")}
    assert recorded >= {p.stem for p in EXTRA.glob("*.yaml")}, recorded
    steps = {s["name"]: s for s in json.loads(
        (out / "protobuf-null-slices.json").read_text())["steps"]}
    # the answers the polls cannot reach: a write's, a dry run's, a LIST's, a watch event's
    assert steps["create-clusterrole-without-rules"]["response"]["body"]["rules"] is None
    assert steps["dry-run-clusterrole-with-empty-rules"]["response"]["body"]["rules"] is None
    assert [i["rules"] for i in steps["list-clusterrole"]["response"]["body"]["items"]] \
        == [None]
    assert [e["object"]["rules"] for e in steps["read-added"]["events"]] == [None], \
        steps["read-added"]
    assert steps["update-clusterrole-with-empty-rules"]["response"]["body"]["rules"] is None
    assert steps["create-endpointslice-without-endpoints"]["response"]["body"]["ports"] is None
