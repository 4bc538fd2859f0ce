"""Shared test fixtures: paths to the shared conformance material and to kubectl binaries, and
``calls_to``, which records what a function is called with."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from setpoint.parentdeath import children_die_with_me

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SETPOINT_SHARED", ROOT.parent / "shared"))

CallsTo = Callable[[object, str], list[Any]]

# every program the tests start (servers, operators, workloads) dies with this process, even
# when pytest is killed (a CI timeout, Ctrl+C twice): none is left serving on the machine
children_die_with_me()


def kubectl_path(version: str | None = None) -> str:
    """The kubectl on the PATH, or ``kubectl.<version>`` beside its real file."""
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not installed")
    if version is None:
        return found
    candidate = Path(os.path.realpath(found)).parent / f"kubectl.{version}"
    if not candidate.exists():
        pytest.skip(f"kubectl {version} is not installed")
    return str(candidate)


@pytest.fixture
def calls_to(monkeypatch: pytest.MonkeyPatch) -> CallsTo:
    """``calls_to(owner, name)`` replaces ``owner.<name>`` for the test by a function that
    appends its first argument to the list returned, then answers as the real one did: the
    tests that prove work is done once (or not at all) count with it."""
    def record(owner: object, name: str) -> list[Any]:
        calls: list[Any] = []
        real = getattr(owner, name)

        def recording(*args: Any, **kwargs: Any) -> Any:
            calls.append(args[0])
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, recording)
        return calls

    return record
