"""The Status errors a failed patch turns into, as the kube-apiserver's patch handler words them."""

from __future__ import annotations

from setpoint.machinery.errors import StatusError

# errors.NewGenericServerResponse(422, ...) hides the cause behind this fixed sentence
GENERIC_422_MESSAGE = "the server rejected our request due to an error in our request"


def unprocessable() -> StatusError:
    """422 Invalid with the generic message: a patch that cannot be applied to the object."""
    return StatusError(422, "Invalid", GENERIC_422_MESSAGE)


def unexplained(message: str) -> StatusError:
    """500 without a reason: a plain Go error that reached the handler unconverted."""
    return StatusError(500, "", message)
