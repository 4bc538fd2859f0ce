"""The Widget operator with a short cache-sync timeout, for the ``setpoint run`` tests of a
server that refuses it: refusals are retried until ``cache_sync_timeout`` (as
controller-runtime's ``CacheSyncTimeout``), which these tests need not wait two minutes for.
The first refusal is answered within a few hundredths of a second of the informers' start
(measured: 0.04 s of 2 s of start-up), so a second leaves it a wide margin."""

from __future__ import annotations

from examples.widget.operator import widgets
from setpoint.runtime import Manager, ManagerSettings

manager = Manager([widgets], settings=ManagerSettings(
    name="widget-operator", cache_sync_timeout=1.0))
