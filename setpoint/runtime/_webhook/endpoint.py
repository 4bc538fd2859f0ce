"""``Endpoint``: one path of the webhook server and the function that answers its POSTs.

Admission webhooks and the conversion webhook both turn into endpoints; the server only
routes bodies to them and counts what they answer, so it knows neither review format.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

Answer = tuple[int, dict[str, Any]]
"""The HTTP status and the JSON body of an answer."""

Handle = Callable[[bytes, str], Awaitable[Answer]]
"""Answers a request body of the given media type (``application/json``)."""


@dataclass(frozen=True)
class Endpoint:
    """``POST path`` answered by ``handle``."""

    path: str
    handle: Handle

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"webhook path {self.path!r} must start with '/'")
