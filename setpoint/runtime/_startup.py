"""Waiting for a manager's caches, and saying what keeps them from syncing.

As controller-runtime's: each informer's reflector retries a failed list or watch with
backoff, refusals (401, 403) too (client-go tools/cache/reflector.go: ``Run`` is
``wait.BackoffUntil(ListAndWatch)``, each failure handed to the ``WatchErrorHandler``),
and a controller's start fails only once its caches have not synced within
``CacheSyncTimeout``, two minutes by default (pkg/internal/controller/controller.go,
``startEventSourcesAndQueueLocked``: "failed to wait for caches to sync"). So RBAC granted
while the manager waits (a Role applied after the Deployment) lets it start. Each refusal
is logged when it happens with what would end it (:func:`refusal_text`: for a 403, the
verb and resource refused, what the controllers declare, and the roles that grant it), and
the timeout's error says it again for every kind still refused.

The timeout is each controller's own (``Controller.with_options(cache_sync_timeout=...)``,
controller-runtime's ``controller.Options.CacheSyncTimeout``, defaulting to the manager's
``cache_sync_timeout`` as pkg/controller/controller.go defaults it to the manager's
``Controller.CacheSyncTimeout``), and its error names the controller and each kind, as the
Kind source's ``WaitForSync`` does (pkg/internal/source/kind.go: "timed out waiting for
cache to be synced for Kind ...").
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from setpoint.client import ClusterConfig, UnauthorizedError
from setpoint.runtime._informer import Informer
from setpoint.runtime._objects import KindKey

__all__ = ["CacheSyncTimeout", "StartupRefused", "refusal_text", "wait_for_caches"]


class CacheSyncTimeout(TimeoutError):
    """The caches did not sync within ``cache_sync_timeout``."""


class StartupRefused(CacheSyncTimeout):
    """The caches did not sync within ``cache_sync_timeout`` and the API server was still
    refusing the manager's credentials (401) or its lists and watches (403)."""


async def wait_for_caches(informers: Mapping[KindKey, Informer], timeout: float,
                          config: ClusterConfig, permissions: Any, *,
                          controller: str | None = None) -> None:
    """Return once every informer has synced; their refusals and failures are retried
    meanwhile. After ``timeout`` seconds raise :class:`StartupRefused` when a kind not
    synced was refused, else :class:`CacheSyncTimeout`; either names ``controller`` (whose
    caches these are, if any) and each kind not synced, with its refusal and fix or its
    last failure. ``permissions`` is a callable giving the manager's Permissions."""
    synced = asyncio.ensure_future(
        asyncio.gather(*(i.wait_synced() for i in informers.values())))
    try:
        done, _ = await asyncio.wait([synced], timeout=timeout)
    finally:
        synced.cancel()
        await asyncio.gather(synced, return_exceptions=True)
    if synced in done:
        return
    pending = {k: i for k, i in informers.items() if not i.has_synced}
    # each kind with the reason it is not synced, so that the one line says what to fix
    kinds = "; and for ".join(_kind_text(k, i, config, permissions)
                              for k, i in pending.items())
    whose = f'controller "{controller}": ' if controller is not None else ""
    text = (f"{whose}timed out after {timeout:g}s waiting for cache to be synced for "
            f"{kinds}")
    if any(i.refusal is not None for i in pending.values()):
        raise StartupRefused(text)
    raise CacheSyncTimeout(text)


def _kind_text(key: KindKey, informer: Informer, config: ClusterConfig,
               permissions: Any) -> str:
    if informer.refusal is not None:
        return f"Kind {key}: {refusal_text(key, informer, config, permissions)}"
    return f"Kind {key}: {informer.last_error}" if informer.last_error else f"Kind {key}"


def _resource_name(key: KindKey, informer: Informer) -> tuple[str, str]:
    """(group, plural) of the informer's kind, as discovery named it when it could."""
    if informer.info is not None:
        return informer.info.group, informer.info.resource
    return key.group, key.kind.lower() + "s"


def refusal_text(key: KindKey, informer: Informer, config: ClusterConfig,
                 permissions: Any) -> str:
    """What the server refused the informer of ``key`` (its last refusal), and the fix."""
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
    # the rule a cache of this kind needs (a reflector lists, then watches)
    needed = "" if verb == "discover" else (
        f'; the cache needs the rule apiGroups=["{group}"] resources=["{plural}"] '
        'verbs=["list","watch"]')
    return (f"403 Forbidden: {error.message}{needed}; {granted}: bind this user to the "
            "roles `setpoint generate rbac` writes for them")


def _declared_verbs(permissions: Any, group: str, plural: str) -> list[str]:
    from setpoint.resources._rbac import VERB_ORDER, generate_rbac

    verbs: set[str] = set()
    for document in generate_rbac(permissions()):
        for rule in document.get("rules") or ():
            if group in rule.get("apiGroups", ()) and plural in rule.get("resources", ()):
                verbs.update(rule.get("verbs", ()))
    return sorted(verbs, key=lambda v: (VERB_ORDER.index(v) if v in VERB_ORDER else 99, v))
