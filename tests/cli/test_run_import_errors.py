"""``setpoint run`` of a module that raises while imported: the user's error as Python shows
a script's (``python my_operator.py``): the frames of the user's files, not click's,
Setpoint's or importlib's, then one line naming the module that failed; exit status 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BAD_PLURAL = '''\
from setpoint.resources import CustomResource


class Gadget(CustomResource, group="example.dev", version="v1", plural="Gadgets!"):
    pass
'''

RAISES = '''\
def helper() -> None:
    raise RuntimeError("no widget store configured")


helper()
'''


def _run(tmp_path: Path, module: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    return subprocess.run([sys.executable, "-m", "setpoint.cli.main", "run", f"{module}:manager"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("source", "expected"), [
    (BAD_PLURAL, ["Traceback (most recent call last):",
                  '  File "{file}", line 4, in <module>',
                  '    class Gadget(CustomResource, group="example.dev", version="v1", '
                  'plural="Gadgets!"):',
                  "TypeError: Gadget: plural 'Gadgets!' must be a lowercase DNS label"]),
    (RAISES, ["Traceback (most recent call last):",
              '  File "{file}", line 5, in <module>',
              "    helper()",
              '  File "{file}", line 2, in helper',
              '    raise RuntimeError("no widget store configured")',
              "RuntimeError: no widget store configured"]),
    ("def f(:\n    pass\n", ['  File "{file}", line 1',
                              "    def f(:",
                              "          ^",
                              "SyntaxError: invalid syntax"]),
], ids=["bad-plural", "raises", "syntax-error"])
def test_an_error_importing_the_users_module_shows_only_the_users_frames(
        tmp_path: Path, source: str, expected: list[str]) -> None:
    module = "broken_operator"
    file = tmp_path / f"{module}.py"
    file.write_text(source)
    result = _run(tmp_path, module)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [line.format(file=file) for line in expected] + [
        f"Error: module {module!r} failed to import: the error above is in its code"
    ], result.stderr
