"""The etcd operator's Manager: ``setpoint run operators.etcd.operator:manager``.

In a cluster (``setpoint generate manifests operators.etcd.operator:manager``) it runs
with leader election, so a second replica waits warm; it caches only the pods and claims
it manages.
"""

from __future__ import annotations

from operators.etcd.backup import backup
from operators.etcd.backuppolicy import schedule
from operators.etcd.controller import etcd
from operators.etcd.objects import MANAGED_BY, OPERATOR
from operators.etcd.restore import restore
from setpoint.resources.models.core_v1 import PersistentVolumeClaim, Pod, Secret
from setpoint.runtime import CacheScope, Manager, ManagerSettings

_MANAGED = CacheScope(label_selector=f"{MANAGED_BY}={OPERATOR}")

settings = ManagerSettings(
    name=OPERATOR,
    leader_election=True,
    http_port=8081,  # where `setpoint generate manifests` points the probes
    cache_scopes={Pod: _MANAGED, PersistentVolumeClaim: _MANAGED, Secret: _MANAGED},
)

manager = Manager([etcd, backup, schedule, restore], settings=settings)
