"""A configuration is checked before it is rolled out: never a broken file on disk.

Two checks, the second only where ``promtool`` is installed:

1. parsing: the configuration and every rule file must be YAML of the right shape (a
   mapping with ``global``/``scrape_configs``; rule files a ``groups`` list of named
   groups whose rules have ``expr`` and one of ``record``/``alert``) - what a user can
   break through a PrometheusRule or a relabeling;
2. ``promtool check config --syntax-only`` on the configuration and ``promtool check
   rules`` on the rule files, which parse PromQL, durations and relabelings exactly as
   the Prometheus that will load them.

The result is None when valid, else the message the status shows.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

PROMTOOL_TIMEOUT = 30.0


def parse_errors(config: str, rule_files: Mapping[str, str]) -> str | None:
    try:
        parsed = yaml.safe_load(config)
    except yaml.YAMLError as exc:
        return f"configuration: {exc}"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("scrape_configs", []), list):
        return "configuration: expected a mapping with a scrape_configs list"
    for name, text in rule_files.items():
        problem = _rule_file_problem(text)
        if problem:
            return f"rule file {name}: {problem}"
    return None


def _rule_file_problem(text: str) -> str | None:
    try:
        parsed: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return str(exc)
    groups = parsed.get("groups") if isinstance(parsed, dict) else None
    if not isinstance(groups, list):
        return "expected a groups list"
    seen: set[str] = set()
    for group in groups:
        name = group.get("name") if isinstance(group, dict) else None
        if not name:
            return "a group without a name"
        if name in seen:
            return f"group {name!r} is defined twice"
        seen.add(name)
        for rule in group.get("rules") or ():
            if not isinstance(rule, dict) or not str(rule.get("expr", "")).strip():
                return f"group {name!r}: a rule without expr"
            if ("record" in rule) == ("alert" in rule):
                return f"group {name!r}: a rule needs exactly one of record and alert"
    return None


async def _run(*argv: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(process.communicate(), PROMTOOL_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        return 1, f"{argv[0]} took longer than {PROMTOOL_TIMEOUT:.0f}s"
    return process.returncode or 0, out.decode(errors="replace")


def promtool() -> str | None:
    return shutil.which("promtool")


async def promtool_errors(config: str, rule_files: Mapping[str, str]) -> str | None:
    tool = promtool()
    if tool is None:
        return None
    with tempfile.TemporaryDirectory(prefix="prometheus-config-") as tmp:
        root = Path(tmp)  # mkdtemp makes it 0700
        config_path = root / "prometheus.yaml"
        config_path.write_text(config)
        code, out = await _run(tool, "check", "config", "--syntax-only", str(config_path))
        if code != 0:
            return "promtool check config: " + _summary(out, str(root))
        if rule_files:
            paths = []
            for name, text in rule_files.items():
                path = root / os.path.basename(name)
                path.write_text(text)
                paths.append(str(path))
            code, out = await _run(tool, "check", "rules", *paths)
            if code != 0:
                return "promtool check rules: " + _summary(out, str(root))
    return None


def _summary(output: str, tmp: str) -> str:
    lines = [line.replace(tmp + "/", "") for line in output.splitlines()
             if line.strip() and not line.startswith("Checking")]
    return " ".join(lines)[:1000]


async def errors(config: str, rule_files: Mapping[str, str]) -> str | None:
    """None when the configuration and its rule files are valid; else why not."""
    return parse_errors(config, rule_files) or await promtool_errors(config, rule_files)


def alertmanager_parse_errors(config: str) -> str | None:
    try:
        parsed = yaml.safe_load(config)
    except yaml.YAMLError as exc:
        return f"configuration: {exc}"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("route"), dict):
        return "configuration: expected a mapping with a route"
    receivers = {r.get("name") for r in parsed.get("receivers") or () if isinstance(r, dict)}
    if parsed["route"].get("receiver") not in receivers:
        return f"configuration: the root route's receiver {parsed['route'].get('receiver')!r}" \
               " is not among the receivers"
    return None


async def alertmanager_errors(config: str) -> str | None:
    """None when an Alertmanager configuration is valid (parsing, then ``amtool
    check-config`` where installed); else why not."""
    problem = alertmanager_parse_errors(config)
    tool = shutil.which("amtool")
    if problem is not None or tool is None:
        return problem
    with tempfile.TemporaryDirectory(prefix="alertmanager-config-") as tmp:
        path = Path(tmp) / "alertmanager.yaml"
        path.write_text(config)
        code, out = await _run(tool, "check-config", str(path))
        return None if code == 0 else "amtool check-config: " + _summary(out, tmp)
