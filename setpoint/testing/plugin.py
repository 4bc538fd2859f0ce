"""The Setpoint pytest plugin (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("setpoint")
    group.addoption(
        "--kubeconfig", action="store", default=None, metavar="FILE",
        help="run Setpoint tests against the cluster of this kubeconfig instead of a fresh "
             "embedded cluster per test",
    )
