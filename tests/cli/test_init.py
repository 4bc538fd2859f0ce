"""``setpoint init``: a project that works out of the box, as ``kubebuilder init && kubebuilder
create api`` scaffolds one (sigs.k8s.io/kubebuilder pkg/plugins/golang/v4/scaffolds: an
API type, a controller, tests, a Dockerfile, a Makefile with test/run/manifests/deploy)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import venv
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from setpoint.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
# The wheels of Setpoint's and the generated project's dependencies, kept between runs (and
# worktrees, and CI's fresh clones) in the user's cache: the registry is asked once, and
# again only when a pyproject.toml asks for something the wheelhouse lacks
WHEELHOUSE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
    / "setpoint" / "test-wheelhouse"


def test_init_writes_a_complete_project(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["init", str(tmp_path / "shop-operator"), "--group",
                                      "shop.example.com", "--kind", "Order"])
    assert result.exit_code == 0, result.output
    project = tmp_path / "shop-operator"
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == [
        ".dockerignore", ".gitignore", "Dockerfile", "Makefile", "README.md",
        "pyproject.toml", "shop_operator/__init__.py", "shop_operator/api.py",
        "shop_operator/controller.py", "tests/__init__.py", "tests/test_controller.py"]
    makefile = (project / "Makefile").read_text()
    for target in ("test:", "run:", "manifests:", "deploy:", "docker-build:"):
        assert f"\n{target}" in makefile
    assert "setpoint run shop_operator.controller:manager" in makefile
    pyproject = (project / "pyproject.toml").read_text()
    assert 'dependencies = ["setpoint>=0.1"]' in pyproject and 'asyncio_mode = "auto"' in pyproject
    for path in project.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_the_generated_crd_is_the_kind_asked_for(tmp_path: Path) -> None:
    assert CliRunner().invoke(cli, ["init", str(tmp_path / "shop"), "--group",
                                    "shop.example.com", "--kind", "Policy"]).exit_code == 0
    out = subprocess.run(
        [sys.executable, "-m", "setpoint.cli.main", "generate", "crds", "shop.api"],
        cwd=tmp_path / "shop", env={**os.environ, "PYTHONPATH": str(tmp_path / "shop")},
        capture_output=True, text=True, check=True, timeout=60).stdout
    (crd,) = yaml.safe_load_all(out)
    assert crd["metadata"]["name"] == "policies.shop.example.com"
    assert crd["spec"]["names"]["kind"] == "Policy"


def test_bad_names_and_a_non_empty_directory_are_one_line_errors(tmp_path: Path) -> None:
    bad_kind = CliRunner().invoke(cli, ["init", str(tmp_path / "a"), "--kind", "my_kind"])
    assert bad_kind.exit_code == 2 and "is not a CamelCase kind" in bad_kind.output
    bad_group = CliRunner().invoke(cli, ["init", str(tmp_path / "a"), "--group", "Bad_Group"])
    assert bad_group.exit_code == 2 and "is not a DNS subdomain" in bad_group.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    taken = CliRunner().invoke(cli, ["init", str(tmp_path / "full")])
    assert taken.exit_code == 2 and "is not empty" in taken.output
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]


def fill_wheelhouse(project: Path, env: dict[str, str]) -> None:
    """Download from the registry what installing Setpoint and ``project[test]`` needs,
    their build backends included (pip's isolated builds install those too), each wheel
    renamed into place whole: another run may be installing from the wheelhouse."""
    build_requires = {requirement for source in (ROOT, project) for requirement in
                      tomllib.loads((source / "pyproject.toml").read_text())[
                          "build-system"]["requires"]}
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WHEELHOUSE.parent) as download:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", download,
                        str(ROOT), f"{project}[test]", *sorted(build_requires)],
                       env=env, check=True, timeout=900)
        for wheel in Path(download).iterdir():
            os.replace(wheel, WHEELHOUSE / wheel.name)


def site_packages(env_dir: Path) -> Path:
    return env_dir / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / \
        "site-packages"


def install(env_dir: Path, project: Path, env: dict[str, str], *args: str) -> None:
    """pip install ARGS into the venv from the wheelhouse alone, filled first if it lacks
    something. No pip inside the venv (ensurepip is most of a venv's creation): this
    interpreter's pip installs into it with --python, run by the venv's own interpreter."""
    command = [sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"),
               "install", "--quiet", "--no-index", "--find-links", str(WHEELHOUSE), *args]
    if subprocess.run(command, env=env, capture_output=True, timeout=600).returncode != 0:
        fill_wheelhouse(project, env)
        subprocess.run(command, env=env, check=True, timeout=600)


def dependency_layer(project: Path, env: dict[str, str]) -> Path:
    """The site-packages of a venv of Setpoint's declared dependencies and nothing else (not
    Setpoint, not pytest), installed once per dependency list and Python and kept beside
    the wheelhouse: unpacking them is most of an install (kubernetes-validate alone is
    17,000 files). Built aside and renamed into place whole."""
    dependencies = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "project"]["dependencies"])
    key = hashlib.sha256(json.dumps([sys.version, dependencies]).encode()).hexdigest()[:16]
    layer = WHEELHOUSE.parent / f"dependencies-{key}"
    if not layer.is_dir():
        WHEELHOUSE.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix="building-", dir=WHEELHOUSE.parent))
        venv.create(building, with_pip=False)
        (building / "requirements.txt").write_text("\n".join(dependencies) + "\n")
        install(building, project, env, "-r", str(building / "requirements.txt"))
        try:
            building.rename(layer)
        except OSError:  # another run put its own there first
            shutil.rmtree(building)
    return site_packages(layer)


@pytest.mark.timeout(900)  # the first run on a machine downloads the dependencies once
def test_a_generated_project_passes_its_own_tests_in_a_fresh_venv(tmp_path: Path) -> None:
    """The acceptance of issue 13: installed from this checkout into a new virtualenv whose
    only other packages are Setpoint's declared dependencies (a layer its .pth adds, see
    :func:`dependency_layer`) and what the project's pyproject.toml asks for, from nothing
    but a wheelhouse (``--no-index``: a dependency either forgets is missing), its tests
    pass as generated."""
    project = tmp_path / "guestbook-operator"
    assert CliRunner().invoke(cli, ["init", str(project)]).exit_code == 0
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "KUBECONFIG")}
    (site_packages(env_dir) / "setpoint_dependencies.pth").write_text(
        f"{dependency_layer(project, env)}\n")
    install(env_dir, project, env, "-e", str(ROOT), "-e", f"{project}[test]")
    tests = subprocess.run([str(env_dir / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "4 passed" in tests.stdout
