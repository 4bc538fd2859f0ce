"""The CEL parser's LALR analysis kept between processes (celparsercache.py): the next
process loads what the first built and parses the same trees; the file is private to the
user; a file others could have written, or one that does not load, is rebuilt, never
unpickled or a failed parse."""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from setpoint.cluster.apiextensions.schema import celoptional, celparsercache

RULES = ("self.a.?b.orValue(1) == [?self.c, 2][0] && 'x'.size() > 0",
         "{?'k': optional.of(1)}.size() == 1 ? true : false", "true || null == false")

PARSE_IN_A_NEW_PROCESS = """
import sys
from setpoint.cluster.apiextensions.schema import celoptional, celparsercache
for rule in sys.argv[1:]:
    print(celoptional.parser().parse(rule).pretty())
"""


def _parse_in_a_new_process(cache: Path, *rules: str) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run([sys.executable, "-c", PARSE_IN_A_NEW_PROCESS, *rules], env=env,
                          check=True, capture_output=True, text=True, timeout=120).stdout


def _saved(cache: Path) -> list[Path]:
    return sorted((cache / "setpoint").glob("cel-parser-*.pickle"))


def test_the_next_process_loads_the_analysis_and_parses_the_same_trees(
        tmp_path: Path) -> None:
    built_here = "".join(celoptional.parser.__wrapped__().parse(r).pretty() + "\n"
                         for r in RULES)
    first = _parse_in_a_new_process(tmp_path, *RULES)
    [saved] = _saved(tmp_path)
    assert stat.S_IMODE((tmp_path / "setpoint").stat().st_mode) == 0o700
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    written = saved.stat().st_mtime_ns
    second = _parse_in_a_new_process(tmp_path, *RULES)
    assert first == second == built_here
    assert saved.stat().st_mtime_ns == written  # loaded, not built and saved again


class _Analysis:
    """A stand-in for lark's parser in the cache's own tests: saved and loaded with pickle,
    as ``Lark.save``/``Lark.load`` do."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def save(self, file: IO[bytes]) -> None:
        pickle.dump({"origin": "loaded"}, file)


def _load(file: IO[bytes]) -> _Analysis:
    return _Analysis(pickle.load(file)["origin"])


def _use(cache: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return celparsercache.load_or_build("key", lambda: _Analysis("built"), _load).origin


def test_a_damaged_file_is_rebuilt_and_replaced(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    assert _use(tmp_path, monkeypatch) == "built"
    assert _use(tmp_path, monkeypatch) == "loaded"
    [saved] = _saved(tmp_path)
    saved.write_bytes(b"not a pickle")
    assert _use(tmp_path, monkeypatch) == "built"
    assert _use(tmp_path, monkeypatch) == "loaded"


def test_a_file_others_may_write_is_never_loaded(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A file someone else could have replaced is not unpickled: a pickle that would create
    a marker file when loaded is left unloaded."""
    _use(tmp_path, monkeypatch)
    [saved] = _saved(tmp_path)
    marker = tmp_path / "unpickled"
    saved.write_bytes(pickle.dumps(_Touch(marker)))
    saved.chmod(0o666)
    assert _use(tmp_path, monkeypatch) == "built"
    assert not marker.exists()
    saved.chmod(0o600)  # the same file, private again, is what the cache trusts
    saved.write_bytes(pickle.dumps(_Touch(marker)))
    _use(tmp_path, monkeypatch)
    assert marker.exists()


def test_a_shared_cache_directory_is_not_used(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "setpoint").mkdir()
    (tmp_path / "setpoint").chmod(0o777)
    assert _use(tmp_path, monkeypatch) == "built"
    assert _use(tmp_path, monkeypatch) == "built"
    assert _saved(tmp_path) == []


class _Touch:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))
