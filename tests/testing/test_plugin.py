"""The pytest plugin as its users meet it: fresh, shared and external clusters."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from setpoint.client import Client, Kind, NotFoundError, load_kubeconfig
from setpoint.runtime import Context, Controller, Result
from setpoint.testing import SetpointCluster, ThreadedCluster, fresh_cluster
from setpoint.testing.plugin import KindNotInstalledError, ManagerLauncher, Waiter

pytest_plugins = ["pytester"]

CONFIGMAP = Kind("v1", "ConfigMap")

INNER_CONFTEST = """
import pytest
pytest_plugins = []
"""

INNER_TESTS = """
from pathlib import Path
import pytest

SEEN = Path(__file__).parent / "seen.txt"

async def test_one(setpoint_cluster, k8s):
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    with SEEN.open("a") as f:
        f.write(f"{setpoint_cluster.server} {setpoint_cluster.namespace} {k8s.namespace}\\n")

async def test_two(setpoint_cluster, k8s):
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    with SEEN.open("a") as f:
        f.write(f"{setpoint_cluster.server} {setpoint_cluster.namespace} {k8s.namespace}\\n")
"""


def run_inner(pytester: pytest.Pytester, tests: str, *args: str) -> list[list[str]]:
    pytester.makeini("[pytest]\nasyncio_mode = auto\n"
                     "asyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_inner=tests)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          f"--rootdir={pytester.path}", *args)
    result.assert_outcomes(passed=2)
    return [line.split() for line in (pytester.path / "seen.txt").read_text().splitlines()]


def test_each_test_gets_a_fresh_cluster_by_default(pytester: pytest.Pytester) -> None:
    (first, second) = run_inner(pytester, INNER_TESTS)
    assert first[0] != second[0]  # two servers, so "x" could be created twice
    assert first[1:] == second[1:] == ["default", "default"]


def test_the_module_marker_shares_one_cluster_with_a_namespace_per_test(
        pytester: pytest.Pytester) -> None:
    tests = "import pytest\npytestmark = pytest.mark.setpoint_cluster(scope='module')\n" + \
        INNER_TESTS
    (first, second) = run_inner(pytester, tests)
    assert first[0] == second[0]
    assert first[1] != second[1] and first[1] != "default"
    assert first[1] == first[2] and second[1] == second[2]


def test_kubeconfig_option_runs_tests_in_namespaces_of_that_cluster_then_deletes_them(
        pytester: pytest.Pytester) -> None:
    shared = ThreadedCluster().start()
    try:
        (first, second) = run_inner(pytester, INNER_TESTS,
                                    f"--kubeconfig={shared.kubeconfig}")
        assert first[0] == second[0] == load_kubeconfig(shared.kubeconfig).server

        async def namespaces_deleted() -> None:
            async with Client(load_kubeconfig(shared.kubeconfig)) as client:
                for namespace in (first[1], second[1]):
                    try:
                        ns = await client.get(Kind("v1", "Namespace"), namespace)
                    except NotFoundError:
                        continue  # already gone
                    assert ns["metadata"].get("deletionTimestamp"), ns

        asyncio.run(namespaces_deleted())
    finally:
        shared.stop()


def _ca_of(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    return str(config["clusters"][0]["cluster"]["certificate-authority-data"])


async def test_fresh_clusters_share_the_processs_keys_so_only_the_first_makes_them() -> None:
    # making a CA and keys is most of a cluster's start: once per process, not per test
    async with fresh_cluster() as first:
        first_ca = _ca_of(first.kubeconfig)
    async with fresh_cluster() as second:
        assert second.embedded is not None
        assert _ca_of(second.kubeconfig) == first_ca


def counting_controller(calls: list[str]) -> Controller[dict[str, object]]:
    ctrl: Controller[dict[str, object]] = Controller.for_(CONFIGMAP, name="counting")

    @ctrl.reconcile
    async def reconcile(ctx: Context[dict[str, object]], obj: dict[str, object]) -> Result:
        calls.append(ctx.request.name)
        return Result()

    return ctrl


async def test_run_manager_restarts_with_an_empty_cache_and_stops_at_teardown(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    calls: list[str] = []
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    runner = await run_manager(counting_controller(calls))
    await wait_for(lambda: "c" in calls)
    first = runner.manager

    await runner.crash()
    assert first is not None and not first.ready
    await runner.restart()
    assert runner.manager is not first and runner.starts == 2
    await wait_for(lambda: calls.count("c") == 2)  # a new process reconciles everything

    await run_manager.stop_all()
    assert not runner.running


async def test_install_makes_a_custom_resource_servable(
        setpoint_cluster: SetpointCluster, k8s: Client, tmp_path: Path) -> None:
    from examples.widget.api import Widget, WidgetSpec

    await setpoint_cluster.install(Widget)
    await setpoint_cluster.install(Widget)  # again: replaced, not an error
    created = await k8s.create(Widget(name="w", spec=WidgetSpec(message="m")))
    assert created.spec.message == "m"


def test_loading_the_plugin_imports_neither_the_sdk_nor_the_server() -> None:
    """pytest loads the plugin in every run where Setpoint is installed."""
    import subprocess
    import sys

    heavy = ["setpoint.client", "setpoint.runtime", "setpoint.cluster", "aiohttp", "uvicorn"]
    code = ("import sys, setpoint.testing.plugin; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_a_kubeconfig_pytest_took_for_a_test_path_is_one_line_naming_the_fix(
        pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``pytest --kubeconfig FILE`` (two words, as the docs wrote it) with FILE outside the
    project: pytest looked for its configuration from FILE's directory, missed the project's
    pyproject.toml, and every coroutine test failed "async def functions are not natively
    supported" (pytest decides rootdir before plugins add options: _pytest/config/__init__.py
    Config._preparse, _initini)."""
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nasyncio_mode = "auto"\n')
    pytester.makepyfile(test_inner="async def test_it():\n    pass\n")
    kubeconfig = tmp_path_factory.mktemp("elsewhere") / "kubeconfig"
    kubeconfig.write_text("")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kubeconfig",
                                           str(kubeconfig))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest read --kubeconfig's {kubeconfig} as a test "
                                 "path when it looked for its configuration file, and found "
                                 f"none (rootdir *): write --kubeconfig={kubeconfig}"])
    assert "not natively supported" not in result.stdout.str()


def test_coroutine_tests_of_a_project_without_pytest_settings_run(
        pytester: pytest.Pytester) -> None:
    """A new project's first test, with no ``asyncio_mode = "auto"`` anywhere (pytest-asyncio
    is then strict): each coroutine test using Setpoint's fixtures failed "async def
    functions are not natively supported", naming neither the setting nor the marker. The
    plugin marks them ``asyncio`` itself; a coroutine test without its fixtures is left to
    pytest-asyncio's mode."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_inner="""
async def test_with_the_fixtures(setpoint_cluster, k8s):
    await k8s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})

async def test_without_them():
    pass
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          f"--rootdir={pytester.path}")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_without_them*"])  # strict mode's own verdict


async def test_run_manager_for_a_kind_not_installed_says_install_at_once(
        setpoint_cluster: SetpointCluster, run_manager: ManagerLauncher) -> None:
    """A test that forgot ``setpoint_cluster.install(Widget)`` waited the caches'
    two-minute sync timeout, then failed with a hint for a real cluster (`setpoint generate
    crds | kubectl apply`). It fails at once naming the call."""
    from examples.widget.operator import manager

    with pytest.raises(KindNotInstalledError) as raised:
        await run_manager(manager)
    assert str(raised.value).startswith(
        "the test's cluster does not serve Widget: `await setpoint_cluster.install(Widget)` "
        "before run_manager")
    assert run_manager.runners == []

    from examples.widget.api import Widget

    await setpoint_cluster.install(Widget)
    runner = await run_manager(manager)
    assert runner.running
