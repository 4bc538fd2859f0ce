"""Waiting for a command's parallel requests: all of them settle before the first failure
is raised, so none is left retrying on a client that the command then closes (asyncio.run
would cancel it mid-request and its reopened connection pool would leak)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def gather_settled(*aws: Awaitable[Any]) -> list[Any]:
    """``asyncio.gather(*aws)``, but raising the first failure only once all have ended."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results
