"""Every part of the server and every module of the runtime stands in its layer contract.

import-linter's layers contract constrains only the modules it names: a part added to the
server or the runtime and left out of "server layers" or "runtime layers" could import
upward unseen. These tests keep the inner layering (endpoints → admission | controllers →
registry → storage; manager → controller → context → writer) whole as the tree grows.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "setpoint"


def contract(name: str) -> dict[str, object]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]
    [found] = [c for c in contracts if c["name"] == name]
    return dict(found)


def layered(found: dict[str, object]) -> set[str]:
    """The modules a layers contract names, in the form its layers spell them."""
    layers = found["layers"]
    assert isinstance(layers, list)
    return {part.strip() for layer in layers for part in re.split(r"\|", str(layer))}


def children(folder: Path, prefix: str) -> set[str]:
    """The modules and packages directly in ``folder``, as ``prefix`` + name."""
    return {prefix + (p.stem if p.is_file() else p.name) for p in folder.iterdir()
            if p.name != "__init__.py" and not p.name.startswith((".", "__"))
            and (p.suffix == ".py" or (p / "__init__.py").exists())}


def server_parts() -> set[str]:
    cluster = PACKAGE / "cluster"
    # apiextensions is two parts: the CRD schema machinery under the registry, CRD serving
    # above it
    return (children(cluster, "setpoint.cluster.") - {"setpoint.cluster.apiextensions"}) \
        | children(cluster / "apiextensions", "setpoint.cluster.apiextensions.")


def test_every_part_of_the_server_stands_in_the_server_layers() -> None:
    missing = sorted(server_parts() - layered(contract("server layers")))
    assert not missing, f'add to the "server layers" contract in pyproject.toml: {missing}'


def test_every_runtime_module_stands_in_the_runtime_layers() -> None:
    modules = children(PACKAGE / "runtime", "")
    found = contract("runtime layers: manager -> controller -> context -> writer")
    missing = sorted(modules - layered(found))
    assert not missing, f'add to the runtime layers contract in pyproject.toml: {missing}'


def test_the_checks_find_what_is_missing(tmp_path: Path) -> None:
    """The readers themselves: a module in the folder and in no layer is found."""
    (tmp_path / "_placed.py").write_text("")
    (tmp_path / "_unplaced.py").write_text("")
    (tmp_path / "_pkg").mkdir()
    (tmp_path / "_pkg" / "__init__.py").write_text("")
    (tmp_path / "notes").mkdir()  # no package
    found = children(tmp_path, "")
    assert found == {"_placed", "_unplaced", "_pkg"}
    assert found - layered({"layers": ["_pkg", "_placed | _other"]}) == {"_unplaced"}
    assert "setpoint.cluster.endpoints" in server_parts()
    assert "setpoint.cluster.apiextensions.schema" in server_parts()
