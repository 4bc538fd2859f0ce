"""Status answers become the exception class of their reason, carrying the Status."""

from __future__ import annotations

import orjson
import pytest

from setpoint.client import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    ExpiredError,
    GatewayTimeoutError,
    GoneError,
    InternalServerError,
    InvalidError,
    NotFoundError,
    ServiceUnavailableError,
    UnsupportedMediaTypeError,
)
from setpoint.client.errors import api_error_from_response, api_error_from_status
from setpoint.machinery.errors import Cause, StatusError, invalid, stale_conflict


def test_invalid_status_keeps_code_reason_message_and_causes() -> None:
    sent = invalid("ConfigMap", "bad", [Cause("FieldValueInvalid", "Invalid value", "data")])
    err = api_error_from_response(422, orjson.dumps(sent.to_status()))
    assert isinstance(err, InvalidError) and isinstance(err, StatusError)
    assert (err.code, err.reason, err.name, err.kind) == (422, "Invalid", "bad", "ConfigMap")
    assert err.causes == [Cause("FieldValueInvalid", "Invalid value", "data")]
    assert err.message == sent.message
    assert err.status == sent.to_status()
    assert repr(err).startswith("InvalidError(code=422, reason='Invalid'")


@pytest.mark.parametrize(
    ("reason", "code", "cls"),
    [
        ("NotFound", 404, NotFoundError), ("AlreadyExists", 409, AlreadyExistsError),
        ("Conflict", 409, ConflictError), ("Expired", 410, ExpiredError),
        ("Gone", 410, GoneError), ("UnsupportedMediaType", 415, UnsupportedMediaTypeError),
        ("Timeout", 504, GatewayTimeoutError), ("", 500, InternalServerError),
        ("SomethingNew", 418, ApiError),
    ],
)
def test_the_reason_picks_the_class_and_the_code_fills_in(
    reason: str, code: int, cls: type[ApiError],
) -> None:
    status = {"kind": "Status", "status": "Failure", "message": "m", "code": code}
    if reason:
        status["reason"] = reason
    err = api_error_from_status(status)
    assert type(err) is cls


def test_a_conflict_from_the_machinery_round_trips() -> None:
    sent = stale_conflict("configmaps", "cm")
    err = api_error_from_response(409, orjson.dumps(sent.to_status()), method="PUT")
    assert isinstance(err, ConflictError)
    assert "please apply your changes to the latest version" in err.message


def test_a_body_that_is_not_a_status_gets_client_gos_generic_reason() -> None:
    err = api_error_from_response(409, b"<html>conflict</html>", method="POST")
    assert isinstance(err, AlreadyExistsError)
    err = api_error_from_response(503, b"upstream down", {"Retry-After": "4"})
    assert isinstance(err, ServiceUnavailableError)
    assert err.retry_after == 4
    assert err.message == "the server is currently unable to handle the request (upstream down)"
    err = api_error_from_response(502, b"bad gateway")
    assert isinstance(err, InternalServerError) and "bad gateway" in err.message


def test_expired_is_a_gone_error_for_informers_to_catch() -> None:
    assert issubclass(ExpiredError, GoneError)
