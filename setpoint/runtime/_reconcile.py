"""The contract at the centre: a reconciler turns a :class:`Request` into a :class:`Result`.

A request names an object (namespace and name), never an event: the reconciler reads the
world as it is now and makes it converge, so it is level-triggered and idempotent by
construction. Raising an exception retries the request with backoff; raising
:class:`TerminalError` logs it without retrying.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from setpoint.machinery.frozen import quick_init


class Request(NamedTuple):
    """The object to reconcile: ``namespace`` is ``""`` for cluster-scoped kinds."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@quick_init
@dataclass(frozen=True, slots=True)
class Result:
    """What to do after a successful reconcile.

    ``requeue_after`` reconciles again after that many seconds (for polling something the
    cluster does not announce). Without it: wait for the next change.

    ``requeue`` (reconcile again with the rate limiter's backoff) is deprecated, as
    controller-runtime's ``Result.Requeue`` is (pkg/reconcile/reconcile.go: "Deprecated:
    Use `RequeueAfter` instead"): a backoff is for retrying errors, so raise to retry, and
    give ``requeue_after`` to poll. It still works, with a ``DeprecationWarning``.
    """

    requeue: bool = False
    requeue_after: float | None = None

    def __post_init__(self) -> None:
        if self.requeue_after is not None and self.requeue_after < 0:
            raise ValueError("requeue_after must not be negative")
        if self.requeue:
            warnings.warn("Result(requeue=True) is deprecated: raise to retry with backoff, "
                          "or give requeue_after to poll", DeprecationWarning, stacklevel=3)


class ReconcileResultError(TypeError):
    """A reconcile returned something other than a :class:`Result` or ``None``. Its
    message says which function and what to return: the traceback (the controller's own
    frames) is not logged."""


class Reconciler(Protocol):
    """The low-level contract: anything with ``async reconcile(request) -> Result``."""

    async def reconcile(self, request: Request) -> Result: ...


class TerminalError(Exception):
    """A failure retrying cannot fix (invalid user input): logged and counted, not retried.
    The object is reconciled again at its next change; the failures before it still count
    towards that reconcile's backoff (controller-runtime does not Forget on an error)."""
