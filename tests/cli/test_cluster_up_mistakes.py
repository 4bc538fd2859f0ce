"""``setpoint cluster up`` with a --data directory or a --kubeconfig file it cannot write:
one line naming the path and the option to change, not "cannot listen on 127.0.0.1:0" (the
address was never the problem). The paths lie under a regular file, so that even root
cannot write them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest


def cluster_up(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("KUBECONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--port", "0",
         "--no-workloads", *options], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(("options", "unwritable", "fix"), [
    (["--data", "{file}/data", "--kubeconfig", "{tmp}/kubeconfig"], "{file}/data",
     "pass a --data directory this user can write (or --memory)"),
    (["--memory", "--kubeconfig", "{file}/kubeconfig"], "{file}/.kubeconfig.tmp",
     "pass a --kubeconfig file in a directory this user can write"),
], ids=["data", "kubeconfig"])
def test_an_unwritable_path_is_named_with_its_option(
        tmp_path: Path, options: list[str], unwritable: str, fix: str) -> None:
    file = tmp_path / "a-file"
    file.write_text("")
    result = cluster_up(tmp_path, *(o.format(file=file, tmp=tmp_path) for o in options))
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (f"error: cannot write {unwritable.format(file=file)}: Not a directory: "
                    f"{fix}"), result.stderr
    assert "Traceback" not in result.stderr


def _up_until_ready(tmp_path: Path, kubeconfig: Path) -> str:
    """Run ``cluster up`` until it is ready, stop it, and return its stderr."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--no-workloads", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while "ready\n" not in lines:
            line = process.stdout.readline()
            assert line, f"cluster up ended: {lines}"
            lines.append(line)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    return err


@pytest.mark.parametrize(("mode", "owner", "warned"), [
    (0o755, None, False),   # ~/.kube as usually made: others see names, not the 0600 file
    (0o777, None, True),    # others could replace the kubeconfig: the fix is ours to make
    (0o777, 65534, False),  # another user's directory: no chmod of ours can fix it
], ids=["ours-755", "ours-777", "another-users"])
def test_a_kubeconfig_directory_is_warned_about_only_when_we_can_and_should_fix_it(
        tmp_path: Path, mode: int, owner: int | None, warned: bool) -> None:
    """etcd warns about a data dir others can reach (go.etcd.io/etcd/client/pkg/fileutil
    CheckDirPermission); a warning the user cannot act on, or about a directory that keeps
    nothing from anyone (its kubeconfig is 0600), is noise."""
    directory = tmp_path / "kube"
    directory.mkdir()
    if owner is not None:
        if os.geteuid() != 0:
            pytest.skip("giving a directory to another user needs root")
        os.chown(directory, owner, -1)
    directory.chmod(mode)
    err = _up_until_ready(tmp_path, directory / "kubeconfig")
    warnings = [line for line in err.splitlines() if str(directory) in line]
    if warned:
        assert len(warnings) == 1 and warnings[0].endswith(
            f"directory {directory} is mode 777: other users can replace the files in it; "
            f"chmod 700 {directory}"), err
    else:
        assert warnings == [], err


def test_a_port_in_use_names_the_option_that_moves_it(tmp_path: Path) -> None:
    """The README's and the guides' `cluster up` listen on 6443 unless told: a second one
    (or anything on 6443) said only "Address already in use"."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cluster_up(tmp_path, "--memory", "--port", str(port),
                            "--kubeconfig", str(tmp_path / "kubeconfig"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use: pass another "
        "--port (--port 0 takes a free one; the kubeconfig tells which)"), result.stderr


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--node-memory", "16GB", "'16GB' is not a Kubernetes quantity: write e.g. 16Gi or 16G"),
    ("--node-cpu", "4 cores", "'4 cores' is not a Kubernetes quantity: write e.g. 4 or 500m"),
    ("--node-cpu", "-1", "'-1' is negative: write e.g. 4 or 500m"),
], ids=["memory-unit", "cpu-words", "negative"])
def test_a_node_capacity_that_is_no_quantity_names_the_form_to_write(
        tmp_path: Path, option: str, value: str, message: str) -> None:
    """``--node-memory 16GB`` (the unit people write) said only "is not a quantity"; the
    error now shows the form Kubernetes' quantities take (k8s.io/apimachinery
    pkg/api/resource/quantity.go, ParseQuantity: binary Ki/Mi/Gi or decimal k/M/G
    suffixes, no unit words)."""
    result = cluster_up(tmp_path, "--memory", option, value)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last == f"Error: Invalid value for '{option}': {message}", result.stderr
