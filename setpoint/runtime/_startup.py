"""A manager's start: waiting for its caches, and giving up at once when the server refuses.

client-go's reflectors retry a 401 or 403 forever and controller-runtime's manager only
notices when ``CacheSyncTimeout`` (two minutes) runs out. A manager that is starting cannot
become useful while the server refuses its credentials (401) or its own watches (403), so it
stops with one line that says who was refused what, and for a 403 what its controllers
declare (the roles ``setpoint generate rbac`` writes for them). A refusal after the caches
synced is retried as before: RBAC may be granted again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from setpoint.client import ClusterConfig, UnauthorizedError
from setpoint.runtime._informer import Informer
from setpoint.runtime._objects import KindKey

__all__ = ["CacheSyncTimeout", "StartupRefused", "wait_for_caches"]


class StartupRefused(Exception):
    """The API server refused the manager's credentials or its watches while it started."""


class CacheSyncTimeout(TimeoutError):
    """The caches did not sync within ``cache_sync_timeout``."""


async def wait_for_caches(informers: Mapping[KindKey, Informer], timeout: float,
                          config: ClusterConfig, permissions: Any) -> None:
    """Return once every informer has synced. Raise :class:`StartupRefused` as soon as one
    is refused (401, or 403 on its own list or watch), :class:`CacheSyncTimeout` after
    ``timeout`` seconds. ``permissions`` is a callable giving the manager's Permissions."""
    synced = asyncio.ensure_future(
        asyncio.gather(*(i.wait_synced() for i in informers.values())))
    refused = [asyncio.ensure_future(i.refused.wait()) for i in informers.values()]
    waiters: list[asyncio.Future[Any]] = [synced, *refused]
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(synced, *refused, return_exceptions=True)
    if synced in done:
        return
    for key, informer in informers.items():
        if informer.refusal is not None and not informer.has_synced:
            raise StartupRefused(_refusal_text(key, informer, config, permissions))
    # each kind with the reason it is not synced, so that the one line says what to fix
    pending = "; ".join(f"{k} ({i.last_error})" if i.last_error else str(k)
                        for k, i in informers.items() if not i.has_synced)
    raise CacheSyncTimeout(f"caches did not sync in {timeout:g}s: {pending}")


def _resource_name(key: KindKey, informer: Informer) -> tuple[str, str]:
    """(group, plural) of the informer's kind, as discovery named it when it could."""
    if informer.info is not None:
        return informer.info.group, informer.info.resource
    return key.group, key.kind.lower() + "s"


def _refusal_text(key: KindKey, informer: Informer, config: ClusterConfig,
                  permissions: Any) -> str:
    assert informer.refusal is not None
    verb, error = informer.refusal
    group, plural = _resource_name(key, informer)
    resource = f"{plural}.{group}" if group else plural
    if isinstance(error, UnauthorizedError):
        user = f' user "{config.user}"' if config.user else ""
        where = f' (kubeconfig context "{config.context}")' if config.context else ""
        return (f"401 Unauthorized: the API server at {config.server} does not accept the "
                f"credentials of{user or ' this client'}{where}, refused to {verb} "
                f"{resource}: renew them or use another kubeconfig")
    declared = _declared_verbs(permissions, group, plural)
    granted = (f"its controllers declare {', '.join(declared)} on {resource}"
               if declared else f"its controllers declare nothing on {resource}")
    return (f"403 Forbidden: {error.message}; {granted}: bind this user to the roles "
            "`setpoint generate rbac` writes for them")


def _declared_verbs(permissions: Any, group: str, plural: str) -> list[str]:
    from setpoint.resources._rbac import VERB_ORDER, generate_rbac

    verbs: set[str] = set()
    for document in generate_rbac(permissions()):
        for rule in document.get("rules") or ():
            if group in rule.get("apiGroups", ()) and plural in rule.get("resources", ()):
                verbs.update(rule.get("verbs", ()))
    return sorted(verbs, key=lambda v: (VERB_ORDER.index(v) if v in VERB_ORDER else 99, v))
