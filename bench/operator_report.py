"""The Markdown table of the operator benchmark: medians of the runs, min and max, and
ratios to the floor and to kopf."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.common import ratio, spread

Result = dict[str, Any]


_fmt = spread

CONTENDERS = ("baseline", "setpoint", "setpoint-patch", "kopf", "floor", "floor-writes")


def _ratio(mine: list[float], theirs: list[float]) -> str:
    return ratio(mine, theirs, digits=2)


def report(results: list[Result], command: str) -> str:
    """One table per N; failed runs are listed and left out of the numbers."""
    lines = [f"Reproduce: `.venv/bin/python {command}`", ""]
    failed = [r for r in results if r["error"]]
    ok = [r for r in results if not r["error"]]
    for n in sorted({r["n"] for r in results}):
        of_n = [r for r in ok if r["n"] == n]

        def values(contender: str, get: Callable[[Result], float],
                   of_n: list[Result] = of_n) -> list[float]:
            return [get(r) for r in of_n if r["contender"] == contender]

        runs = max((len(values(c, lambda r: 0)) for c in {r["contender"] for r in of_n}),
                   default=0)
        lines += [f"**N = {n}** ({runs} run{'s' * (runs != 1)}; median (min-max))", "",
                  "| | all ready, s | xfloor | xkopf | all updated, s | xfloor | xkopf "
                  "| requests/Widget create | requests/Widget update | idle requests "
                  "| peak RSS, MiB | CPU, s | CPU per event, ms |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for contender in CONTENDERS:
            ready = values(contender, lambda r: r["ready_seconds"])
            if not ready:
                continue
            update = values(contender, lambda r: r["update_seconds"])
            create_req = values(contender, lambda r: sum(r["create_requests"].values()) / r["n"])
            update_req = values(contender, lambda r: sum(r["update_requests"].values()) / r["n"])
            idle = values(contender, lambda r: sum(r["idle_requests"].values()))
            rss = values(contender, lambda r: r["peak_rss_mib"])
            cpu = values(contender, lambda r: r["cpu_seconds"])
            # an event: one Widget created or changed (N of each)
            per_event = values(contender, lambda r: 1000 * r["cpu_seconds"] / (2 * r["n"]))
            lines.append(
                f"| {contender} | {_fmt(ready)} "
                f"| {_ratio(ready, values('floor', lambda r: r['ready_seconds']))} "
                f"| {_ratio(ready, values('kopf', lambda r: r['ready_seconds']))} "
                f"| {_fmt(update)} "
                f"| {_ratio(update, values('floor', lambda r: r['update_seconds']))} "
                f"| {_ratio(update, values('kopf', lambda r: r['update_seconds']))} "
                f"| {_fmt(create_req)} | {_fmt(update_req)} | {_fmt(idle, 0)} "
                f"| {_fmt(rss, 0)} | {_fmt(cpu, 1)} | {_fmt(per_event, 2)} |")
        verbs = _verbs(of_n, n)
        if verbs:
            lines += ["", "Requests by verb and resource, per Widget (median run):", ""]
            lines += [f"- {c}: create {v[0]}; update {v[1]}" for c, v in verbs.items()]
        phase = _update_phase(of_n)
        if phase:
            lines += ["", "The update phase (median run by CPU): CPU seconds of the contender "
                      "and the server (with its workloads' process), and of the counting "
                      "proxy; each request's mean and longest time at the proxy, in ms:", ""]
            lines += [f"- {c}: {v}" for c, v in phase.items()]
        lines.append("")
    for r in failed:
        lines.append(f"- failed: {r['contender']} N={r['n']} run {r['run']}: {r['error']}")
    return "\n".join(lines)


def _verbs(results: list[Result], n: int) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for contender in CONTENDERS:
        mine = sorted((r for r in results if r["contender"] == contender),
                      key=lambda r: r["ready_seconds"])
        if not mine:
            continue
        median = mine[len(mine) // 2]
        out[contender] = (_per_widget(median["create_by_resource"], n),
                          _per_widget(median["update_by_resource"], n))
    return out


def _update_phase(results: list[Result]) -> dict[str, str]:
    """Per contender, its median run's CPU in the update phase and its requests' times; on a
    loaded machine the contender's and the server's CPU together are what the update
    costs, whatever share of the cores the run was given."""
    medians: dict[str, Result] = {}
    for contender in CONTENDERS:
        mine = sorted((r for r in results if r["contender"] == contender
                       and r.get("update_latency")),
                      key=lambda r: r["update_cpu_seconds"] + r["server_update_cpu_seconds"])
        if mine:
            medians[contender] = mine[len(mine) // 2]

    def both(r: Result) -> float:
        return float(r["update_cpu_seconds"] + r["server_update_cpu_seconds"])

    floor = medians.get("floor")
    out: dict[str, str] = {}
    for contender, median in medians.items():
        latency = ", ".join(
            f"{k} {1000 * total / count:.0f} (max {1000 * longest:.0f})"
            for k, (count, total, longest) in sorted(median["update_latency"].items())
            if count)
        versus = f" ({both(median) / both(floor):.2f}x the floor's)" \
            if floor is not None and both(floor) else ""
        out[contender] = (f"contender {median['update_cpu_seconds']:.1f} + server "
                          f"{median['server_update_cpu_seconds']:.1f} = {both(median):.1f}"
                          f"{versus}, proxy {median['proxy_update_cpu_seconds']:.1f}; "
                          f"{latency}")
    return out


def _per_widget(counts: dict[str, int], n: int) -> str:
    shown = [f"{k} {v / n:.2f}" for k, v in sorted(counts.items())
             if not k.startswith("watch") and v]
    return ", ".join(shown) or "none"
