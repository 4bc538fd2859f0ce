"""``setpoint cluster up`` with a --data directory or a --kubeconfig file it cannot write:
one line naming the path and the option to change, not "cannot listen on 127.0.0.1:0" (the
address was never the problem). The paths lie under a regular file, so that even root
cannot write them."""

from __future__ import annotations

import os
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
