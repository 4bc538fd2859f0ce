"""The memcached operator's Manager: ``setpoint run operators.memcached.operator:manager``.

In a cluster (``setpoint generate manifests operators.memcached.operator:manager``) it runs
with leader election, so a second replica waits warm; it caches only the pods it manages.
"""

from __future__ import annotations

from operators.memcached.controller import memcached
from operators.memcached.objects import MANAGED_BY, OPERATOR
from setpoint.resources.models.core_v1 import Pod
from setpoint.runtime import CacheScope, Manager, ManagerSettings

settings = ManagerSettings(
    name=OPERATOR,
    leader_election=True,
    http_port=8081,  # where `setpoint generate manifests` points the probes
    cache_scopes={Pod: CacheScope(label_selector=f"{MANAGED_BY}={OPERATOR}")},
)

manager = Manager([memcached], settings=settings)
