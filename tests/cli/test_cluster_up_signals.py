"""A SIGINT or SIGTERM at any moment of ``setpoint cluster up``'s start stops it, with its
workloads' child process, and it exits as after a signal once ready (code 0, "stopped").

A Go program (kube-apiserver's ``SetupSignalContext``, k8s.io/apiserver
pkg/server/signal.go; ``signal.NotifyContext`` in a kubebuilder main) registers its signal
handler before it does anything else, so that no signal of its start is lost: the first
cancels the context the whole start runs under. The points are found by reading the
command's output (and, for the child, its session), never by sleeping.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import wait_for

EXIT_TIMEOUT = 30.0
"""Generous: a loaded machine may take a while to stop the workloads' controllers; a
command that ignored the signal never ends at all."""

LINE_TIMEOUT = 60.0


def session_processes(sid: int) -> set[int]:
    """The processes of session ``sid`` (``cluster up`` is started as its leader, so every
    process it spawns is in it)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        # after "(comm)": state ppid pgrp session ...
        fields = stat.rpartition(")")[2].split()
        if fields[0] != "Z" and int(fields[3]) == sid:
            found.add(int(entry))
    return found


def start(tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("KUBECONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--nodes", "1", "--kubeconfig", str(tmp_path / "kubeconfig")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True)


async def read_until(process: subprocess.Popen[str], prefix: str) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or not lines[-1].startswith(prefix):
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline),
                                      LINE_TIMEOUT)
        assert line, f"cluster up ended before {prefix!r}: {lines}"
        lines.append(line)
    return lines


async def until_workloads_spawned(process: subprocess.Popen[str]) -> None:
    """Until the workloads' child exists: the moment the old code lost a signal (it was
    spawned before the handler was installed)."""
    # /proc has no event to wait on: the shared wait polls it
    await wait_for(lambda: len(session_processes(process.pid)) >= 2
                   or process.poll() is not None)
    assert process.poll() is None, process.communicate()


async def stopped_cleanly(process: subprocess.Popen[str], signum: int,
                          *, before_handler: bool = False, group: bool = False) -> None:
    if group:  # Ctrl+C in a terminal: the whole foreground process group
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    try:
        out, err = await asyncio.to_thread(process.communicate, timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"still running {EXIT_TIMEOUT} s after {signum!r}: {out}{err}")
    finally:
        remaining = session_processes(process.pid)
        for pid in remaining:
            os.kill(pid, signal.SIGKILL)
    assert not remaining, "processes left behind"
    if before_handler and (process.returncode == -signum or (
            process.returncode == 1 and (err.endswith("Aborted!\n")
                                         or err.rstrip().endswith("KeyboardInterrupt")))):
        # the signal came before the command began (as a Go program's before its main
        # registers a handler): it ended by the signal, and had spawned nothing. A SIGINT
        # may land while the interpreter itself starts, whose KeyboardInterrupt ends it
        # with status 1 before any of the program runs ("Fatal Python error:
        # init_import_site"), or during click's start ("Aborted!")
        return
    assert process.returncode == 0, (process.returncode, out, err)
    assert out.endswith("stopped\n"), out
    assert "Traceback" not in err, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_signal_right_after_spawn(tmp_path: Path, signum: int) -> None:
    process = start(tmp_path)
    await stopped_cleanly(process, signum, before_handler=True)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_signal_once_the_workloads_child_is_spawned(tmp_path: Path, signum: int) -> None:
    process = start(tmp_path)
    await until_workloads_spawned(process)
    await stopped_cleanly(process, signum)


async def test_sigint_after_serving(tmp_path: Path) -> None:
    process = start(tmp_path)
    await read_until(process, "setpoint cluster serving at ")
    await stopped_cleanly(process, signal.SIGINT)
    assert not (tmp_path / "kubeconfig").exists()


async def test_sigint_before_ready(tmp_path: Path) -> None:
    process = start(tmp_path)
    await read_until(process, "nodes starting:")
    await stopped_cleanly(process, signal.SIGINT)


def handles_sigint(pid: int) -> bool:
    """Whether the process catches or ignores SIGINT: its interpreter has started."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":\t", 1) for line in f if ":\t" in line)
    except OSError:
        return False
    bit = 1 << (signal.SIGINT - 1)
    return bool((int(status["SigCgt"], 16) | int(status["SigIgn"], 16)) & bit)


async def test_ctrl_c_to_the_process_group_amid_the_childs_imports(tmp_path: Path) -> None:
    """The child gets the SIGINT too, while it imports the SDK: it stops quietly as well
    (no KeyboardInterrupt traceback from the middle of an import)."""
    process = start(tmp_path)
    await until_workloads_spawned(process)
    (child,) = session_processes(process.pid) - {process.pid}
    await wait_for(lambda: handles_sigint(child) or process.poll() is not None,
                   max_interval=0.002)
    assert process.poll() is None, process.communicate()
    await stopped_cleanly(process, signal.SIGINT, group=True)
