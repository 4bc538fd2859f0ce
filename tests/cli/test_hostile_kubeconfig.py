"""The command line given a broken kubeconfig: one ``Error:`` line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from setpoint.cli.main import cli

BROKEN = {
    "shape": b"clusters: 5\n",
    "encoding": b"\xff\xfe\x00",
    "server-scheme": (b"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                      b"clusters: [{name: c, cluster: {server: 'not a url'}}]\n"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_kubeconfig_is_one_error_line(tmp_path: Path, case: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(BROKEN[case])
    path.chmod(0o600)
    result = CliRunner().invoke(cli, ["metrics", "pod", "x", "--kubeconfig", str(path)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception)
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1, (
        result.output)
