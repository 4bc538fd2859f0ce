"""No file the repository tracks keeps a merge conflict's markers.

A marker left in `docs/architecture.md` survived a session once: git resolves nothing by
itself, and a table row split by ``=======`` still renders, so nobody saw it.
"""

from __future__ import annotations

import subprocess

from tests.conftest import ROOT

SIDES = ("<<<<<<< ", ">>>>>>> ")


def leftover_markers(path: str, text: str) -> list[int]:
    """Line numbers of conflict markers: a setext heading's ``=======`` under text is none."""
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines, 1):
        previous = lines[number - 2] if number > 1 else ""
        divider = line == "=======" and (
            not path.endswith(".md") or not previous.strip() or previous.startswith("|"))
        if line.startswith(SIDES) or divider:
            found.append(number)
    return found


def test_no_tracked_file_keeps_merge_markers() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode().split("\0")
    found: dict[str, list[int]] = {}
    for path in filter(None, tracked):
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        if lines := leftover_markers(path, text):
            found[path] = lines
    assert not found, f"merge conflict markers left at {found}"


def test_markers_are_found_and_setext_headings_are_not() -> None:
    assert leftover_markers("a.md", "| row |\n=======\n| row |\n") == [2]
    assert leftover_markers("a.py", "x = 1\n<<<<<<< HEAD\n") == [2]
    assert leftover_markers("a.md", "Title\n=======\n") == []
