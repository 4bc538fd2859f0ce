"""Shared test fixtures: paths to the shared conformance material and to kubectl binaries."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SETPOINT_SHARED", ROOT.parent / "shared"))


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
