"""A manager started before its CRD is installed: the informer keeps retrying (the CRD may
be on its way) and says, in its log and in the manager's CacheSyncTimeout, that the server
does not serve the kind and how to install it, as controller-runtime's Kind source logs "if
kind is a CRD, it should be installed before calling Start" (pkg/internal/source/kind.go)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from examples.widget.api import Widget
from setpoint.client import Client
from setpoint.runtime._informer import Informer
from setpoint.runtime._objects import kind_key
from setpoint.runtime._startup import CacheSyncTimeout, wait_for_caches
from tests.runtime.conftest import WIDGET
from tests.waiting import wait_for

HINT = ("CustomResourceDefinition, install it (`setpoint generate crds MODULE | kubectl "
        "apply -f -`)")


@pytest.mark.parametrize("ref", [WIDGET, Widget], ids=["kind-by-discovery", "typed-class"])
async def test_an_unserved_kind_names_the_crd_to_install(
        client: Client, ref: Any, caplog: pytest.LogCaptureFixture) -> None:
    informer = Informer(client, ref, namespace="default")
    informer.backoff.initial = 0.05
    task = asyncio.create_task(informer.run())
    try:
        error = await wait_for(lambda: informer.last_error)
        assert error.startswith("the server does not serve ")
        assert "bench.setpoint.dev/v1 (kind Widget): if it is a " + HINT in error
        assert any(HINT in r.getMessage() for r in caplog.records)
        # the manager's one line when its caches do not sync says the same
        with pytest.raises(CacheSyncTimeout) as info:
            await wait_for_caches({kind_key(ref): informer}, 0.01, client.config, list)
        assert str(info.value) == (f"timed out after 0.01s waiting for cache to be synced "
                                   f"for Kind {kind_key(ref)}: {error}")
    finally:
        task.cancel()
