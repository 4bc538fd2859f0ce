"""The Widget operator with a short cache-sync timeout, for the ``setpoint run`` tests of a
server that refuses it: refusals are retried until ``cache_sync_timeout`` (as
controller-runtime's ``CacheSyncTimeout``), which these tests need not wait two minutes for."""

from __future__ import annotations

from examples.widget.operator import widgets
from setpoint.runtime import Manager, ManagerSettings

manager = Manager([widgets], settings=ManagerSettings(
    name="widget-operator", cache_sync_timeout=3.0))
