"""The docs name the tests that prove their promises; every name must point at a real test.

`docs/reliability.md` is a table of promises, each with ``tests/path.py::test_name`` proofs;
a cell may go on with ``::other_test`` for another test of the same file. A renamed or
deleted test would leave a promise without its proof, so a stale name fails here.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from functools import cache

import pytest

from tests.conftest import ROOT

DOCS = ["docs/reliability.md", "docs/benchmarks.md", "docs/architecture.md", "README.md"]

# `tests/x.py` (or `operators/y/tests/x.py`), `tests/x.py::name`, `tests/x.py::Class::name`,
# or `::name` after one of them
FILE = r"(?:[\w.-]+/)*tests/[\w/]+\.py"
REFERENCE = re.compile(rf"({FILE})?((?:::[\w*]+)+)|({FILE})")


def references(doc: str) -> list[tuple[str, str | None]]:
    """``(file, test name or None)`` for each reference; ``::name`` takes the file before it."""
    found: list[tuple[str, str | None]] = []
    for line in (ROOT / doc).read_text().splitlines():
        last: str | None = None
        for match in REFERENCE.finditer(line):
            path = match.group(1) or match.group(3)
            if path:
                last = path
            if match.group(2) is None:
                found.append((path, None))
            elif last is not None:
                found.append((last, match.group(2).rsplit("::", 1)[1]))
    return found


@cache
def defined_names(path: str) -> frozenset[str]:
    """Every function and class name the file defines, at any depth."""
    tree = ast.parse((ROOT / path).read_text())
    return frozenset(node.name for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))


@pytest.mark.parametrize("doc", DOCS)
def test_every_test_a_doc_names_exists(doc: str) -> None:
    refs = references(doc)
    missing = []
    for path, name in refs:
        if not (ROOT / path).is_file():
            missing.append(path)
        elif name is not None and not fnmatch.filter(defined_names(path), name):
            missing.append(f"{path}::{name}")
    assert not missing, f"{doc} names tests that do not exist: {sorted(set(missing))}"


def test_the_reference_reader_finds_files_and_continued_names() -> None:
    """The reader itself: a bare ``::name`` belongs to the file named before it in the line."""
    line = "| p | `tests/a/b.py::test_x`, `::test_y` and `tests/c.py` |"
    found = [(m.group(1) or m.group(3), m.group(2)) for m in REFERENCE.finditer(line)]
    assert found == [("tests/a/b.py", "::test_x"), (None, "::test_y"), ("tests/c.py", None)]
    assert len(references("docs/reliability.md")) > 50
