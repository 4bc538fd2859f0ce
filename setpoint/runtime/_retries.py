"""How a failed reconcile is told: routine retries in one line, bugs with one traceback.

A conflict (409: the object changed since it was read), throttling (429), a server that is
briefly unavailable or slow (500, 503, 504), a dropped connection or a timeout are the
weather of a cluster: controller-runtime requeues them with backoff, and so do we, logging
one warning with the object, the reason and when it is tried again. Anything else is a bug
in the reconciler: its traceback is logged once per object and distinct error (the same
error on every retry of the same object says nothing new), then one line per retry.
"""

from __future__ import annotations

import logging
from typing import Any

from setpoint.client import (
    ApiError,
    ConflictError,
    GatewayTimeoutError,
    InternalServerError,
    ServerTimeoutError,
    ServiceUnavailableError,
    TooManyRequestsError,
    TransportError,
)
from setpoint.runtime._logs import BoundLogger
from setpoint.runtime._reconcile import ReconcileResultError

__all__ = ["FailureLog", "error_text", "is_routine"]

ROUTINE = (ConflictError, TooManyRequestsError, InternalServerError, ServerTimeoutError,
           ServiceUnavailableError, GatewayTimeoutError, TransportError, TimeoutError)


def is_routine(exc: BaseException) -> bool:
    """Whether ``exc`` is the cluster's weather rather than the reconciler's bug."""
    return isinstance(exc, ROUTINE)


def reason_of(exc: BaseException) -> str:
    """A short reason: the Status reason of an API error, else the exception's class."""
    if isinstance(exc, ApiError):
        return exc.reason or str(exc.code)
    if isinstance(exc, TimeoutError):
        return "Timeout"
    return type(exc).__name__


def error_text(exc: BaseException) -> str:
    """One line for people: an API error's message, else the exception's text; never a
    Python repr."""
    if isinstance(exc, ApiError):
        return exc.message or f"{exc.code} {exc.reason}"
    text = str(exc)
    return text or type(exc).__name__


class FailureLog:
    """Remembers the last unexpected error of each request, to show its traceback once."""

    def __init__(self) -> None:
        self._last: dict[Any, tuple[str, str]] = {}

    def forget(self, request: Any) -> None:
        """The request succeeded or was dropped: a new failure gets a traceback again."""
        self._last.pop(request, None)

    def report(self, logger: BoundLogger, request: Any, exc: BaseException, retry_in: float,
               retries: int) -> None:
        fields: dict[str, Any] = {"reason": reason_of(exc), "error": error_text(exc),
                                  "retry_in": f"{retry_in:.3g}s", "retries": retries}
        if is_routine(exc):
            self._last.pop(request, None)
            logger.log(logging.WARNING, "reconcile_retry", **fields)
            return
        signature = (type(exc).__qualname__, str(exc))
        first = self._last.get(request) != signature
        self._last[request] = signature
        # a wrong return value's traceback is the controller's frames, not the user's
        shown = first and not isinstance(exc, ReconcileResultError)
        logger.log(logging.ERROR, "reconcile_failed", exc_info=exc if shown else None,
                   **fields)
