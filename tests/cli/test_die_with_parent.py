"""The programs the project starts die with the process that started them, even one killed
with SIGKILL: a killed pytest leaves no server, and a killed ``cluster up`` no workloads
(prctl(2) ``PR_SET_PDEATHSIG``, through ``setpoint.parentdeath``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from setpoint.parentdeath import PARENT_PID
from tests.conftest import ROOT
from tests.waiting import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG is Linux's")

# a parent as the tests are: it imports the tests' conftest, starts the server with the
# tests' helper, names its child and waits
PARENT = textwrap.dedent("""\
    import sys
    from pathlib import Path

    import tests.conftest
    from tests.support import ServerProcess

    with ServerProcess(Path(sys.argv[1])) as server:
        print(server.proc.pid, flush=True)
        sys.stdin.read()
    """)


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and its parent; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = text.rsplit(b")", 1)[1].split()
    return fields[0].decode(), int(fields[1])


def _gone(pid: int) -> bool:
    stat = _stat(pid)
    return stat is None or stat[0] == "Z"  # a zombie has exited; its reaper may be slow


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == pid and stat[0] != "Z":
                found.append(int(entry.name))
    return found


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != PARENT_PID}
    return {**env, "PYTHONPATH": str(ROOT)}


async def test_a_test_server_and_its_workloads_die_with_a_parent_killed_with_sigkill(
        tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "server")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=_environment(), cwd=ROOT)
    try:
        assert parent.stdout is not None
        server = int(parent.stdout.readline())
        [workloads] = await wait_for(lambda: _children(server))
        parent.kill()
        parent.wait()
        await wait_for(lambda: _gone(server))
        await wait_for(lambda: _gone(workloads))
    finally:
        parent.kill()
        parent.wait()


async def test_cluster_ups_workloads_die_with_it_killed_with_sigkill(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--kubeconfig", str(tmp_path / "kubeconfig")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_environment(), cwd=ROOT)
    try:
        [workloads] = await wait_for(lambda: _children(server.pid))
        server.kill()
        server.wait()
        await wait_for(lambda: _gone(workloads))
    finally:
        server.kill()
        server.wait()


def _version(env: dict[str, str], *through: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*through, sys.executable, "-m", "setpoint.cli.main", "--version"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)


def test_a_child_whose_parent_died_before_it_asked_stops_at_once() -> None:
    """The race a signal asked for too late would lose: the child was reparented before
    its prctl, so the parent it was named is no ancestor of it."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    done = _version({**_environment(), PARENT_PID: str(dead.pid)})
    assert done.returncode == -signal.SIGKILL
    assert done.stdout == ""


def test_a_child_of_a_live_parent_runs_directly_or_through_another_program() -> None:
    env = {**_environment(), PARENT_PID: str(os.getpid())}
    direct = _version(env)
    assert direct.returncode == 0, direct.stderr
    assert "version" in direct.stdout
    between = [sys.executable, "-c",
               "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]
    through = _version(env, *between)
    assert through.returncode == 0, through.stderr
    assert "version" in through.stdout


def test_the_tests_name_themselves_the_parent_of_what_they_start() -> None:
    assert os.environ[PARENT_PID] == str(os.getpid())
