"""The docs' links lead somewhere: every file and section a page points at exists.

A page of ``docs/`` (and the README) points at files with Markdown links and ``docs/*.md``
mentions, and at sections with ``#anchor`` links and ``see "Heading"`` phrases. A renamed
heading or a moved page would leave the reader at a dead end, so a stale one fails here.
Anchors are GitHub's: the heading lowercased, punctuation but ``-`` and ``_`` dropped,
spaces turned into ``-``, a repeated heading suffixed ``-1``, ``-2`` ...
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = [*sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")), "README.md"]

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DOC_MENTION = re.compile(r"`(docs/[\w.-]+\.md)`")
SEE = re.compile(r"\b[Ss]ee \"([^\"]+)\"")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(path: Path) -> list[str]:
    """The lines outside fenced code blocks, where a ``#`` is no heading."""
    lines, fenced = [], False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (inline code marks and link syntax dropped)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def headings(path: Path) -> tuple[str, ...]:
    return tuple(m.group(1) for line in prose_lines(path) if (m := HEADING.match(line)))


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in headings(path):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return frozenset(found)


def dead_ends(doc: str) -> list[str]:
    """What the page points at that does not exist."""
    page = ROOT / doc
    missing = []
    for line in prose_lines(page):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto: lead off the repository
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            unknown_section = anchor and path.suffix == ".md" and anchor not in anchors(path)
            if not path.exists() or unknown_section:
                missing.append(target)
        missing += [m for m in DOC_MENTION.findall(line) if not (ROOT / m).is_file()]
        missing += [f'see "{title}"' for title in SEE.findall(line)
                    if not any(h.startswith(title) for h in headings(page))]
    return missing


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_of_a_doc_leads_to_a_file_or_section(doc: str) -> None:
    missing = dead_ends(doc)
    assert not missing, f"{doc} points at what does not exist: {sorted(set(missing))}"


def test_the_link_reader_finds_dead_ends(tmp_path: Path) -> None:
    """The reader itself: a missing file, a missing anchor and an unknown section are found;
    a live anchor (with GitHub's punctuation and repeat rules) and an outside URL are not."""
    page = tmp_path / "page.md"
    page.write_text(
        "# The store: `Store`, one revision\n## Repeat\n## Repeat\n"
        "[a](#the-store-store-one-revision) [b](#repeat-1) [c](https://example.com/x)\n"
        "[d](#nowhere) [e](missing.md) see \"Repeat\" and see \"Gone\"\n"
        "```\n# not a heading\n```\n[f](#not-a-heading)\n")
    # an absolute path stays itself under ROOT / path
    assert dead_ends(str(page)) == ["#nowhere", "missing.md", 'see "Gone"', "#not-a-heading"]
    assert len(DOCS) > 5


def test_the_readme_begins_with_make_demo_then_make_test() -> None:
    """The first two commands a newcomer reads are the ones that show and prove the product."""
    text = (ROOT / "README.md").read_text()
    first_block = text.split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:]]
    assert [c for c in commands if c][:2] == ["make demo", "make test"]
