"""Exceptions the client raises: one class per Kubernetes Status reason, plus client-side ones.

Every non-2xx answer of an API server becomes an :class:`ApiError` subclass chosen by the
Status ``reason`` (falling back to the HTTP code when the body is not a Status), so callers
write ``except NotFoundError`` the way Go code writes ``apierrors.IsNotFound(err)``. The classes
subclass :class:`setpoint.machinery.errors.StatusError`, so the code, reason, message and
causes are the same fields the embedded server raises with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from setpoint.machinery.errors import StatusError


class ClientError(Exception):
    """Base of the failures that did not come from an API server's answer."""


class ConfigError(ClientError):
    """The kubeconfig or in-cluster environment is missing, malformed or unsupported."""


class AuthError(ClientError):
    """Credentials could not be obtained (token file unreadable, exec plugin failed)."""


class TransportError(ClientError):
    """The server could not be reached or dropped the connection, after all retries."""


class MalformedAnswerError(ClientError, ValueError):
    """A successful answer that is no JSON object: a proxy's page, a foreign server, a body
    cut short. client-go fails it the same way ("couldn't get version/kind; json parse
    error"), never as a decoding traceback."""


class UnknownResourceError(ClientError, LookupError):
    """Discovery does not know the kind or resource asked for, even after a refresh."""


class ApiError(StatusError):
    """A non-2xx answer of the API server, carrying its ``metav1.Status``.

    ``status`` is the Status body as received (or synthesized from the HTTP code when the
    server did not send one); ``code``, ``reason``, ``message`` and ``causes`` are parsed
    from it.
    """

    _raw_status: dict[str, Any] | None = None

    @property
    def status(self) -> dict[str, Any]:
        """The Status body as the server sent it (or as this error would be sent)."""
        return self._raw_status if self._raw_status is not None else self.to_status()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, reason={self.reason!r}, " \
            f"message={self.message!r})"


class BadRequestError(ApiError):
    """400 BadRequest."""


class UnauthorizedError(ApiError):
    """401 Unauthorized: the credentials were missing or rejected."""


class ForbiddenError(ApiError):
    """403 Forbidden: authenticated, but RBAC or admission refused the request."""


class NotFoundError(ApiError):
    """404 NotFound."""


class MethodNotAllowedError(ApiError):
    """405 MethodNotAllowed: the verb is not supported on this resource."""


class NotAcceptableError(ApiError):
    """406 NotAcceptable."""


class AlreadyExistsError(ApiError):
    """409 AlreadyExists: a create hit an existing name."""


class ConflictError(ApiError):
    """409 Conflict: a stale resourceVersion, a failed precondition or an apply conflict."""


class GoneError(ApiError):
    """410: the resourceVersion asked for is no longer available; relist and watch again."""


class ExpiredError(GoneError):
    """410 Expired: a watch or continue token fell out of the server's history window."""


class RequestEntityTooLargeError(ApiError):
    """413 RequestEntityTooLarge."""


class UnsupportedMediaTypeError(ApiError):
    """415 UnsupportedMediaType (e.g. a strategic merge patch on a custom resource)."""


class InvalidError(ApiError):
    """422 Invalid: validation failed; ``causes`` name the fields."""


class TooManyRequestsError(ApiError):
    """429 TooManyRequests: throttled; ``retry_after`` says when to come back."""


class InternalServerError(ApiError):
    """500 InternalError (and any 5xx the server gave no more specific reason for)."""


class ServerTimeoutError(ApiError):
    """500 ServerTimeout: the server could not complete the operation in time."""


class ServiceUnavailableError(ApiError):
    """503 ServiceUnavailable."""


class GatewayTimeoutError(ApiError):
    """504 Timeout: the request timed out, but the server may still carry it out."""


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequestError,
    "Unauthorized": UnauthorizedError,
    "Forbidden": ForbiddenError,
    "NotFound": NotFoundError,
    "MethodNotAllowed": MethodNotAllowedError,
    "NotAcceptable": NotAcceptableError,
    "AlreadyExists": AlreadyExistsError,
    "Conflict": ConflictError,
    "Gone": GoneError,
    "Expired": ExpiredError,
    "RequestEntityTooLarge": RequestEntityTooLargeError,
    "UnsupportedMediaType": UnsupportedMediaTypeError,
    "Invalid": InvalidError,
    "TooManyRequests": TooManyRequestsError,
    "InternalError": InternalServerError,
    "StoreReadError": InternalServerError,
    "ServerTimeout": ServerTimeoutError,
    "ServiceUnavailable": ServiceUnavailableError,
    "Timeout": GatewayTimeoutError,
}

# The reason and message client-go's NewGenericServerResponse gives an answer without a
# Status body, so errors read the same whichever client met them.
_BY_CODE: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    403: ("Forbidden", "the server does not allow access to the requested resource"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: ("NotAcceptable",
          "the server was unable to respond with a content type that the client supports"),
    409: ("Conflict", "the server reported a conflict"),
    410: ("Gone", "the server reported that the resource is gone"),
    413: ("RequestEntityTooLarge", "the server rejected the request as too large"),
    415: ("UnsupportedMediaType",
          "the server was unable to respond with a content type that the client supports"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests",
          "the server has received too many requests and has asked us to try again later"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted, "
          "but may still be processing the request"),
}


def error_class(reason: str, code: int) -> type[ApiError]:
    """The exception class for a Status ``reason``, or for ``code`` when the reason is unknown."""
    if reason in _BY_REASON:
        return _BY_REASON[reason]
    if code in _BY_CODE:
        return _BY_REASON[_BY_CODE[code][0]]
    if code >= 500:
        return InternalServerError
    return ApiError


def api_error_from_status(status: Mapping[str, Any], code: int | None = None) -> ApiError:
    """Build the exception for a ``metav1.Status`` (from a response body or a watch ERROR)."""
    parsed = StatusError.from_status(dict(status), code)
    cls = error_class(parsed.reason, parsed.code)
    err = cls(
        code=parsed.code, reason=parsed.reason, message=parsed.message, name=parsed.name,
        group=parsed.group, kind=parsed.kind, causes=parsed.causes,
        retry_after=parsed.retry_after, uid=parsed.uid,
    )
    err._raw_status = dict(status)
    return err


def api_error_from_response(
    code: int, body: bytes, headers: Mapping[str, str] | None = None, method: str = "GET",
) -> ApiError:
    """Build the exception for a non-2xx HTTP answer.

    A Status body is used as sent; any other body is wrapped in a Status with the reason
    client-go would give that code, keeping the body text as the message's detail.
    """
    status: dict[str, Any] | None = None
    try:
        decoded = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        status = decoded
        status.setdefault("code", code)
    else:
        status = _generic_status(code, body, method)
    retry_after = _retry_after(headers)
    if retry_after is not None:
        details = status.setdefault("details", {})
        details.setdefault("retryAfterSeconds", retry_after)
    return api_error_from_status(status, code)


def _generic_status(code: int, body: bytes, method: str) -> dict[str, Any]:
    text = body.decode("utf-8", "replace").strip()
    if code in _BY_CODE:
        reason, message = _BY_CODE[code]
        if code == 409 and method == "POST":
            reason = "AlreadyExists"
    elif code >= 500:
        reason = "InternalError"
        message = f"an error on the server ({text!r}) has prevented the request from succeeding"
        text = ""
    else:
        reason, message = "", f"the server responded with the status code {code}"
    if text:
        message = f"{message} ({text[:200]})"
    status: dict[str, Any] = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "code": code,
    }
    if reason:
        status["reason"] = reason
    return status


def _retry_after(headers: Mapping[str, str] | None) -> int | None:
    if not headers:
        return None
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0, int(value.strip()))
    except ValueError:
        return None
