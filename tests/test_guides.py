"""The guides' examples run: the Python blocks of each guide, in order, are one test
module, run by pytest with the Setpoint plugin as a user's project would run them."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
GUIDES = ["docs/reconciling.md", "docs/testing.md", "docs/webhooks.md"]


def python_blocks(markdown: str) -> str:
    return "\n\n".join(re.findall(r"^```python\n(.*?)^```", markdown, re.M | re.S))


def guide_module(guide: str) -> str:
    return f"test_{Path(guide).stem}_guide"


def guide_tests(guide: str) -> set[str]:
    """The test functions a guide's blocks define: each must run and pass."""
    tree = ast.parse(python_blocks((ROOT / guide).read_text()))
    return {node.name for node in tree.body if isinstance(
        node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")}


@pytest.fixture(scope="module")
def guides_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ET.Element]:
    """One pytest run of every guide, each its own test module, as a user's project of
    several modules runs (one interpreter, one import of Setpoint, which is most of a run):
    its output and its JUnit report, which says how each guide's tests ended."""
    tmp_path = tmp_path_factory.mktemp("guides")
    for guide in GUIDES:
        (tmp_path / f"{guide_module(guide)}.py").write_text(
            python_blocks((ROOT / guide).read_text()))
    report = tmp_path / "report.xml"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-o", "asyncio_mode=auto", "--continue-on-collection-errors", "--rootdir",
         str(tmp_path), f"--junitxml={report}",
         *(f"{guide_module(guide)}.py" for guide in GUIDES)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=560)
    output = result.stdout[-6000:] + result.stderr[-2000:]
    assert report.exists(), output
    return output, ET.parse(report).getroot()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("guide", GUIDES)
def test_the_guide_runs(guide: str, guides_run: tuple[str, ET.Element]) -> None:
    """Every test the guide defines ran and passed; a module that did not import (its
    collection error) or a test that failed, erred or skipped fails its guide's case."""
    output, report = guides_run
    module = guide_module(guide)
    cases = [case for case in report.iter("testcase")
             if module in (case.get("classname", ""), case.get("name", ""))
             or case.get("classname", "").endswith(f".{module}")]
    broken = [case for case in cases
              if any(child.tag in ("failure", "error", "skipped") for child in case)]
    passed = {str(case.get("name")) for case in cases if case not in broken}
    assert not broken and passed == guide_tests(guide), (
        f"{guide}: passed {sorted(passed)} of {sorted(guide_tests(guide))}\n{output}")


# -- the guides' `setpoint generate` commands -------------------------------------------------

def generate_commands() -> list[tuple[str, str]]:
    """(file, command) of every ``setpoint generate`` line in a shell block of the README,
    the guides and the operators' and examples' READMEs, continuation lines joined, cut
    before its pipe or redirection, and of every complete one quoted inline."""
    files = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in [
        *ROOT.glob("docs/*.md"), *ROOT.glob("operators/*/README.md"),
        *ROOT.glob("examples/*/README.md")])]
    found: list[tuple[str, str]] = []
    for name in files:
        text = (ROOT / name).read_text()
        for block in re.findall(r"^```(?:sh|shell|bash|console)\n(.*?)^```", text, re.M | re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                if re.match(r"(\.venv/bin/)?setpoint generate ", line):
                    found.append((name, re.split(r"\s[|>#]", line)[0].strip()))
        # a complete command quoted in prose is one a reader copies too (the monitoring
        # README's lacked the --image it needs); a synopsis with placeholders is not
        for command in re.findall(r"`((?:\.venv/bin/)?setpoint generate [^`]+)`", text):
            if len(command.split()) >= 4 and not re.search(r"\[|\b[A-Z][A-Z_]+\b", command):
                found.append((name, command))
    return found


GENERATE_COMMANDS = generate_commands()


def test_the_guides_show_generate_commands() -> None:
    assert len(GENERATE_COMMANDS) >= 5, GENERATE_COMMANDS


@pytest.mark.parametrize(("guide", "command"), GENERATE_COMMANDS,
                         ids=[f"{g}:{c.split()[2]}" for g, c in GENERATE_COMMANDS])
def test_a_guides_generate_command_writes_kubernetes_yaml(guide: str, command: str) -> None:
    """Run as written (from the repository's root, as the README does), it succeeds and
    writes YAML documents kubectl could apply: each with an apiVersion, a kind and a name."""
    argv = command.split()
    argv[0:1] = [sys.executable, "-m", "setpoint.cli.main"]
    result = subprocess.run(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{guide}: {command}: {result.stderr}"
    documents = [d for d in yaml.safe_load_all(result.stdout) if d is not None]
    assert documents, f"{guide}: {command} wrote nothing"
    for document in documents:
        assert document.get("apiVersion") and document.get("kind"), document
        assert document.get("metadata", {}).get("name"), document


def test_every_python_block_of_the_documentation_parses() -> None:
    """The blocks that are fragments (not run above) are at least Python a reader can paste:
    top-level ``await`` and ``async with`` allowed, as in an asyncio REPL."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("operators/*/README.md"),
             *ROOT.glob("examples/*/README.md")]
    blocks = 0
    for path in files:
        for block in re.findall(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S):
            blocks += 1
            try:
                compile(block, str(path), "exec", flags=flags)
            except SyntaxError as exc:
                pytest.fail(f"{path.relative_to(ROOT)}: {exc}\n{block}")
    assert blocks >= 15
