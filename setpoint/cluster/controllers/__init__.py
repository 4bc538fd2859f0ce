"""Controllers that run inside the embedded API server process."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer


def start_all(api: APIServer) -> None:
    """Start the controllers a bare API server needs (namespaces, GC, service accounts)."""
