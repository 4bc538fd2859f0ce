"""A successful answer's body as the JSON object every API answer is."""

from __future__ import annotations

import orjson

from setpoint.client.errors import MalformedAnswerError
from setpoint.machinery.objects import Obj


def json_object(body: bytes) -> Obj:
    """``body`` decoded, or :class:`MalformedAnswerError` quoting its start."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedAnswerError(f"the server's answer is no JSON ({exc}): "
                                   f"{body[:80]!r}") from None
    if not isinstance(decoded, dict):
        raise MalformedAnswerError(f"the server's answer is no JSON object: {body[:80]!r}")
    return decoded
