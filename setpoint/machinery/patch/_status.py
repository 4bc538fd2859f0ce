"""The Status errors a failed patch turns into, as the kube-apiserver's patch handler words them."""

from __future__ import annotations

from setpoint.machinery.errors import StatusError

# errors.NewGenericServerResponse(422, ...) hides the cause behind this fixed sentence
GENERIC_422_MESSAGE = "the server rejected our request due to an error in our request"


def unprocessable() -> StatusError:
    """422 Invalid with the generic message: a patch that cannot be applied to the object."""
    return StatusError(422, "Invalid", GENERIC_422_MESSAGE, keep_empty_details=True)


def unexplained(message: str) -> StatusError:
    """A malformed patch the real server answers with a bare 500 (a Go error that reached its
    handler unconverted). It is the client's mistake, so we answer 400 with the same words."""
    return StatusError(400, "BadRequest", message)
