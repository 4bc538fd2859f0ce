"""The workloads benchmark runs end to end (slow: run with ``pytest -m slow``), and writes
its results into its own section of docs/benchmarks.md without touching the others."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.workloads_report import BEGIN, END, write_docs_section

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_benchmark_makes_every_pod_ready_and_rolls_them_out_beside_the_floor(
        tmp_path: Path) -> None:
    results_file, docs = tmp_path / "results.json", tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n## API server\n\nkept\n")
    out = subprocess.run(
        [sys.executable, "bench/workloads.py", "--quick", "--grace", "5,0",
         "--json", str(results_file), "--docs", str(docs)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    results = json.loads(results_file.read_text())
    assert [(r["contender"], r["grace"]) for r in results] == [
        ("setpoint", 5), ("setpoint", 0), ("floor", 0), ("floor (faithful writes)", 0)]
    for r in results:
        assert r["error"] == "" and r["pods"] == 100, r
        assert 0 < r["ready_s"] < 120 and 0 < r["rollout_s"] < 300, r
        assert r["ready_cpu_s"] > 0 and r["peak_rss_mib"] > 0, r
    # a deleted pod keeps its slot while the simulated kubelet stops it (capped grace)
    assert results[0]["held_s"] > 0 and results[0]["rollout_peaks"]["terminating"] > 0
    # the second floor made every write it promises (bench/workload_faithful.py), the
    # driver's create and template PATCH of each Deployment included
    faithful = results[3]
    assert (faithful["ready_writes"], faithful["rollout_writes"]) == (10 * 89, 10 * 139)
    rows = [line for line in out.stdout.splitlines() if line.startswith((
        "| setpoint |", "| floor |", "| floor (faithful writes) |"))]
    assert len(rows) == 4 and "| 1.0x |" in rows[2], out.stdout
    cpu_rows = [line for line in out.stdout.splitlines() if line.startswith("| setpoint (")]
    assert len(cpu_rows) == 2 and all(row.count("x |") == 4 for row in cpu_rows), out.stdout
    text = docs.read_text()
    assert "## API server\n\nkept" in text and text.count(BEGIN) == 1, text
    assert "bench/workloads.py --quick" in text


def test_results_replace_only_their_block_in_the_workloads_section(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n## Workloads\n\nWhy the numbers are what they are.\n\n"
                    "## Operators\n\ntheirs\n")
    write_docs_section(docs, "first table\n")
    write_docs_section(docs, "second table\n")
    text = docs.read_text()
    assert text == ("# Benchmarks\n\n## Workloads\n\nWhy the numbers are what they are.\n\n"
                    f"{BEGIN}\nsecond table\n{END}\n\n## Operators\n\ntheirs\n")


def test_results_create_the_section_and_the_file_when_missing(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    write_docs_section(docs, "table\n")
    assert docs.read_text() == f"# Benchmarks\n\n## Workloads\n\n{BEGIN}\ntable\n{END}\n"
