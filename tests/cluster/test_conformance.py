"""The shared conformance corpus, recorded from a real kube-apiserver, replayed against ours.

One embedded server (``setpoint cluster up`` in its own process, as users run it) serves
every scenario; each scenario then passes or fails on its own.
"""

from __future__ import annotations

import json
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


# Scenarios that spend their time waiting out a watch's timeoutSeconds (6 s each, and the
# real server's answers end only then) and touch nothing outside their own namespace: each
# shard is recorded by a record.py of its own beside the rest, against the same server, so
# the waits overlap instead of adding up. Which scenarios record which answers is unchanged.
WAITING_SHARDS = [["watch-from-list-rv", "watch-initial-events-bookmarks"],
                  ["noop-update-keeps-rv", "dry-run"]]


def shards() -> list[list[str]]:
    waiting = {name for shard in WAITING_SHARDS for name in shard}
    return [*WAITING_SHARDS, [name for name in SCENARIOS if name not in waiting]]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("conformance")
    out = work / "out"
    # the corpus was recorded without workload controllers or kubelets (see its README)
    with ServerProcess(work / "server", "--no-workloads") as server:
        runs = [subprocess.Popen(
            [sys.executable, str(CONFORMANCE / "record.py"), str(server.kubeconfig),
             str(CONFORMANCE / "scenarios"), str(out), "--kubectl", kubectl_path(),
             "--settle-timeout", "5", "--only", *shard],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for shard in shards()]
        logs = [run.communicate(timeout=900)[0] for run in runs]
        (work / "record.log").write_text("".join(logs))
        for run, log in zip(runs, logs, strict=True):
            assert run.returncode == 0, log[-6000:]
    assert {p.stem for p in out.glob("*.json")} >= set(SCENARIOS)
    yield out


# Steps whose recorded answer depends on wall-clock time rather than on server behaviour:
# managedFields are sorted by their time in whole seconds, then by manager name. In
# crd-defaulting the real server's establishing controller wrote its status entry in an
# earlier second than the recorder's later PATCH; a server that runs the scenario within one
# second ties the times, and the tie-break (manager name) orders the same entries the other
# way. Only the order of those entries is relaxed; their content is still compared.
TIME_ORDERED = {("crd-defaulting", "add-default-to-crd"): ["metadata.managedFields"]}


def golden_dir(tmp: Path) -> Path:
    """The golden recordings, with the order of time-sorted entries relaxed where needed."""
    out = tmp / "golden"
    out.mkdir(exist_ok=True)
    for path in (CONFORMANCE / "golden").glob("*.json"):
        data = json.loads(path.read_text())
        for step in data["steps"]:
            unordered = TIME_ORDERED.get((data["scenario"], step["name"]))
            if unordered:
                compare = step.setdefault("compare", {})
                compare["unordered"] = [*compare.get("unordered", []), *unordered]
        (out / path.name).write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_matches_real_apiserver(recording: Path, scenario: str,
                                         tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(CONFORMANCE / "compare.py"), "-v", str(golden_dir(tmp_path)),
         str(recording), "--only", scenario],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
