"""The error of a manager's server (webhooks, probes and metrics) that cannot listen."""

from __future__ import annotations

import os

__all__ = ["ListenError"]


class ListenError(OSError):
    """A manager's server could not listen on its address (in use, not this host's):
    ``what`` it serves, and the ``option`` of ``setpoint run`` that moves it."""

    def __init__(self, host: str, port: int, cause: OSError, what: str = "webhooks",
                 option: str = "--webhook-address") -> None:
        # asyncio's own text quotes the address as a Python tuple: say it as the OS does
        reason = os.strerror(cause.errno) if cause.errno else (cause.strerror or str(cause))
        super().__init__(cause.errno, f"cannot serve {what} on {host}:{port}: {reason}")
        self.host, self.port, self.reason, self.option = host, port, reason, option

    def __str__(self) -> str:
        return str(self.strerror)
