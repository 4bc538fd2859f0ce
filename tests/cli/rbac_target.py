"""An operator that declares only what it reads, for the RBAC tests of ``setpoint generate
rbac --leader-elect``: every Lease or Event grant then comes from leader election."""

from __future__ import annotations

from setpoint.resources import Permissions

permissions = Permissions(watches=["configmaps"])
