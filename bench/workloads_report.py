"""The Markdown of the workloads benchmark, and its place in ``docs/benchmarks.md``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import ratio, spread

Result = dict[str, Any]

SECTION = "## Workloads"
BEGIN = "<!-- bench/workloads.py results: begin -->"
END = "<!-- bench/workloads.py results: end -->"


_fmt = spread


def _nodes(rows: list[Result]) -> str:
    return "/".join(str(n) for n in sorted({r.get("nodes", 10) for r in rows})) or "10"


def _ratio(mine: list[float], floor: list[float]) -> str:
    return ratio(mine, floor, digits=1)


def report(results: list[Result], command: str, cores: int) -> str:
    """One table per size: medians (min-max) of the runs that succeeded, ratios of the
    medians to the floor's; failed runs are listed below it."""
    lines = [f"Reproduce: `.venv/bin/python {command}`", ""]
    ok = [r for r in results if not r["error"]]
    for deployments in sorted({r["deployments"] for r in results}):
        mine = [r for r in ok if r["deployments"] == deployments]
        loads = [r[k] for r in mine for k in ("load_before", "load_after")]
        runs = max((sum(1 for r in mine if _key(r) == key) for key in {_key(r) for r in mine}),
                   default=0)
        slots = "/".join(str(n) for n in sorted({r["node_pods"] for r in mine
                                                   if "node_pods" in r})) or "110"
        lines += [
            f"**{deployments} Deployments x 10 replicas = {deployments * 10} pods on "
            f"{_nodes(mine)} nodes "
            f"of {slots} pod slots**"
            f" ({runs} run{'s' * (runs != 1)}, median (min-max); {cores} cores; load average "
            f"(1 min) {_fmt(loads, 1)} around the runs)", "",
            "| | grace (held), s | all available, s | xfloor | last pod Ready, s "
            "| rollout, s | xfloor | server CPU, s: ready + rollout | peak RSS, MiB "
            "| rollout peak: pods / terminating / unschedulable |",
            "|---|---|---|---|---|---|---|---|---|---|"]
        floor = [r for r in mine if r["contender"] == "floor"]
        for key in sorted({_key(r) for r in mine}, key=_order):
            rows = [r for r in mine if _key(r) == key]

            def col(get: Callable[[Result], float], rows: list[Result] = rows) -> list[float]:
                return [get(r) for r in rows]

            ready, rollout = col(lambda r: r["ready_s"]), col(lambda r: r["rollout_s"])
            peaks = "-"
            if key[0] == "setpoint":
                peaks = " / ".join(_fmt([r["rollout_peaks"][k] for r in rows], 0)
                                   for k in ("pods", "terminating", "unschedulable"))
            lines.append(
                f"| {key[0]} | {_grace(key)} | {_fmt(ready)} "
                f"| {_ratio(ready, col(lambda r: r['ready_s'], floor))} "
                f"| {_fmt(col(lambda r: r['pods_ready_s']))} "
                f"| {_fmt(rollout)} | {_ratio(rollout, col(lambda r: r['rollout_s'], floor))} "
                f"| {_fmt(col(lambda r: r['ready_cpu_s']), 1)} + "
                f"{_fmt(col(lambda r: r['rollout_cpu_s']), 1)} "
                f"| {_fmt(col(lambda r: r['peak_rss_mib']), 0)} | {peaks} |")
        lines += ["", *_cpu_table(mine), ""]
    for r in results:
        if r["error"]:
            lines.append(f"- failed: {r['contender']} grace={r['grace']} run {r['run']}: "
                         f"{r['error']}")
    return "\n".join(lines).rstrip() + "\n"


FAITHFUL = "floor (faithful writes)"


def _cpu_table(mine: list[Result]) -> list[str]:
    """The CPU (the API server and, for the simulation, the workloads' process) against
    both floors: the 3-writes floor and the faithful one (medians of the runs)."""
    floor = [r for r in mine if r["contender"] == "floor"]
    faithful = [r for r in mine if r["contender"] == FAITHFUL]
    lines = ["| CPU, s | ready | x floor | x faithful | rollout | x floor | x faithful "
             "| writes per pod: ready / rollout |", "|---|---|---|---|---|---|---|---|"]
    for key in sorted({_key(r) for r in mine}, key=_order):
        rows = [r for r in mine if _key(r) == key]
        cells = [f"{key[0]} ({_grace(key)})"]
        for phase in ("ready_cpu_s", "rollout_cpu_s"):
            values = [r[phase] for r in rows]
            cells += [_fmt(values, 2), ratio(values, [r[phase] for r in floor], digits=2),
                      ratio(values, [r[phase] for r in faithful], digits=2)]
        writes = "-"
        if key[0] == FAITHFUL:
            writes = " / ".join(_fmt([r[k] / r["pods"] for r in rows], 2)
                                for k in ("ready_writes", "rollout_writes"))
        lines.append("| " + " | ".join(cells) + f" | {writes} |")
    return lines


Key = tuple[str, int | None, float | None]


def _key(r: Result) -> Key:
    return r["contender"], r["grace"], r.get("held_s")


def _grace(key: Key) -> str:
    """The grace period asked for, and (when different) how long pods were held."""
    held = key[2]
    return f"{key[1]} ({held:g})" if held is not None else str(key[1])


def _order(key: Key) -> tuple[bool, bool, float, int]:
    return (key[0] == FAITHFUL, key[0] == "floor", -(key[2] or 0), -(key[1] or 0))


def write_docs_section(path: Path, text: str) -> None:
    """Put ``text`` between the result markers of the Workloads section of ``path``, keeping
    every other section and the section's own prose; create what is missing."""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    doc = path.read_text() if path.exists() else "# Benchmarks\n"
    if BEGIN in doc and END in doc:
        start, end = doc.index(BEGIN), doc.index(END) + len(END)
        doc = doc[:start] + block + doc[end:]
    else:
        match = re.search(rf"^{re.escape(SECTION)}\s*$", doc, flags=re.MULTILINE)
        if match is None:
            doc = doc.rstrip() + f"\n\n{SECTION}\n\n{block}\n"
        else:
            following = re.search(r"^## ", doc[match.end():], flags=re.MULTILINE)
            at = match.end() + following.start() if following else len(doc)
            doc = doc[:at].rstrip() + f"\n\n{block}\n" + ("\n" + doc[at:] if following else "")
    path.write_text(doc)
