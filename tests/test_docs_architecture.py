"""`docs/architecture.md` stays true to the tree: every module named, none that is gone.

The page is where a newcomer finds each concept in one guess, so a module it does not name
is one nobody will find, and a file it names that was renamed sends the reader nowhere. The
libraries the package depends on each have a row saying why that one.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.conftest import ROOT

ARCHITECTURE = ROOT / "docs" / "architecture.md"
# the typed built-in kinds are generated, one module per group-version (`models/` is named)
GENERATED = ROOT / "setpoint" / "resources" / "models"
NAMED_FILE = re.compile(r"[\w/]+\.(?:py|json)\b")


def modules(top: str) -> list[Path]:
    return sorted(p for p in (ROOT / top).rglob("*.py")
                  if p.name != "__init__.py" and "tests" not in p.relative_to(ROOT).parts
                  and GENERATED not in p.parents)


def unnamed(text: str, paths: list[Path]) -> list[str]:
    """The modules whose file name the text never mentions."""
    mentioned = {name.rsplit("/", 1)[-1] for name in NAMED_FILE.findall(text)}
    return [str(p.relative_to(ROOT)) for p in paths if p.name not in mentioned]


def test_every_module_of_the_package_and_the_operators_is_named() -> None:
    text = ARCHITECTURE.read_text()
    missing = unnamed(text, modules("setpoint") + modules("operators"))
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_file_the_page_names_exists() -> None:
    present = {p.name for p in ROOT.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts}
    named = {name.rsplit("/", 1)[-1] for name in NAMED_FILE.findall(ARCHITECTURE.read_text())}
    gone = sorted(named - present)
    assert not gone, f"docs/architecture.md names files that do not exist: {gone}"


def test_every_dependency_has_its_reason() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [d for extra in project["optional-dependencies"].values()
                                        for d in extra]
    names = [re.split(r"[^A-Za-z0-9_.-]", d, maxsplit=1)[0].lower() for d in wanted]
    table = ARCHITECTURE.read_text().split("## Dependencies and why", 1)[1].lower()
    missing = [n for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", table)]
    assert not missing, f"docs/architecture.md gives no reason for: {missing}"


def test_the_checks_find_what_is_missing() -> None:
    """The readers themselves: a module not mentioned is found, a mentioned one is not."""
    paths = [ROOT / "setpoint" / "cluster" / "storage" / "store.py",
             ROOT / "setpoint" / "cluster" / "storage" / "sqlite.py"]
    found = unnamed("`storage/store.py` keeps objects", paths)
    assert found == ["setpoint/cluster/storage/sqlite.py"]
    assert len(modules("setpoint")) > 300
