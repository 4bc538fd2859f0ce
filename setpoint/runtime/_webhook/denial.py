"""``Denied``: how a webhook handler refuses a request, and the Status the API server relays.

    raise Denied("memcached pools are frozen on Fridays")            # 403 Forbidden
    raise Denied("must be at least 1", field="spec.replicas", value=0)
    # 422: Memcached.cache.setpoint.dev "m" is invalid: spec.replicas: Invalid value: 0:
    #      must be at least 1

The API server wraps the Status it gets in ``admission webhook "<name>" denied the request:
<message>`` and keeps its code, reason and ``details.causes``, so ``kubectl`` shows field
errors exactly as it shows the server's own validation errors. A handler may also raise a
:class:`~setpoint.machinery.errors.StatusError` (e.g. from a client call) to answer its
Status as it is, as controller-runtime does with an ``APIStatus`` error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from setpoint.machinery import errors, fielderrors
from setpoint.machinery.errors import Cause

__all__ = ["Denied"]

# the reasons Kubernetes pairs with these codes (metav1.StatusReason)
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           405: "MethodNotAllowed", 409: "Conflict", 410: "Gone", 422: "Invalid",
           429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
           504: "Timeout"}


class _Omitted:
    def __repr__(self) -> str:
        return "<omitted>"


OMITTED: Any = _Omitted()


class Denied(Exception):
    """Refuse the request.

    Without field errors the answer is ``code`` (default 403) with its reason and
    ``message``. ``field`` makes it a field error: ``Invalid value: <value>: <message>`` at
    that path (``value`` left out when not given); ``causes`` are further field errors
    built with :mod:`setpoint.machinery.fielderrors` (``required``, ``invalid``,
    ``forbidden``, ``not_supported`` …). With field errors the answer is 422 ``Invalid``
    worded as the API server words its own validation, unless ``code`` says otherwise; a
    ``message`` given with ``causes`` but no ``field`` replaces that wording.
    """

    def __init__(self, message: str = "", *, code: int | None = None,
                 reason: str | None = None, field: str | None = None,
                 value: Any = OMITTED, causes: Iterable[Cause] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.causes = list(causes)
        if field is not None:
            head = "Invalid value" if value is OMITTED \
                else f"Invalid value: {fielderrors.format_value(value)}"
            detail = f"{head}: {message}" if message else head
            self.causes.insert(0, Cause(fielderrors.INVALID, detail, field))
        self.summarized = field is not None or not message

    def __repr__(self) -> str:
        return f"Denied({self.message!r}, code={self.code}, causes={len(self.causes)})"

    def status(self, *, kind: str, group: str, name: str) -> dict[str, Any]:
        """The ``metav1.Status`` of this refusal of a request about ``group``/``kind``
        ``name``."""
        if not self.causes:
            code = self.code or 403
            return errors.StatusError(code, self.reason or REASONS.get(code, ""),
                                      self.message).to_status()
        err = errors.invalid(kind, name, self.causes, group)
        if not self.summarized:
            err.message = self.message
        if self.code is not None and self.code != err.code:
            err.code = self.code
            err.reason = REASONS.get(self.code, "")
        if self.reason is not None:
            err.reason = self.reason
        return err.to_status()
