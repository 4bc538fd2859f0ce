"""The stack operators' Manager: ``setpoint run operators.stack.operator:manager``.

One process runs both controllers (MysqlCluster and Moodle); each could run alone. It
caches only the pods, Secrets and EndpointSlices it needs.
"""

from __future__ import annotations

from operators.stack.labels import MANAGED_BY, OPERATOR
from operators.stack.moodle import moodle_controller
from operators.stack.mysql import mysql_cluster
from setpoint.resources.models.core_v1 import Pod, Secret
from setpoint.runtime import CacheScope, Manager, ManagerSettings

settings = ManagerSettings(
    name=OPERATOR,
    leader_election=True,
    http_port=8081,  # where `setpoint generate manifests` points the probes
    cache_scopes={Pod: CacheScope(label_selector=f"{MANAGED_BY}={OPERATOR}"),
                  Secret: CacheScope(label_selector=f"{MANAGED_BY}={OPERATOR}")},
)

manager = Manager([mysql_cluster, moodle_controller], settings=settings)
