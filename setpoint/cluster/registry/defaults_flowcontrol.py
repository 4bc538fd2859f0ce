"""flowcontrol.apiserver.k8s.io/v1 defaults: kubernetes v1.32 pkg/apis/flowcontrol/v1/
defaults.go (``SetDefaults_FlowSchemaSpec``, ``SetDefaults_LimitedPriorityLevelConfiguration``,
``SetDefaults_ExemptPriorityLevelConfiguration``, ``SetDefaults_QueuingConfiguration``), which
Go's decoder applies before validation: a FlowSchema without a matchingPrecedence gets 1000,
a queue set without sizes gets 64 queues, hands of 8 and 50 waiting requests."""

from __future__ import annotations

from setpoint.cluster.registry.gozero import default_unset as _set
from setpoint.cluster.registry.gozero import struct_field as _struct
from setpoint.machinery.objects import Obj

DEFAULT_MATCHING_PRECEDENCE = 1000
DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30
DEFAULT_QUEUES, DEFAULT_HAND_SIZE, DEFAULT_QUEUE_LENGTH_LIMIT = 64, 8, 50


def _unset_int(d: Obj, key: str, value: int) -> None:
    """A non-pointer int32: zero is unset."""
    if d.get(key) in (None, 0):
        d[key] = value


def default_flow_schema(obj: Obj) -> None:
    _unset_int(_struct(obj, "spec"), "matchingPrecedence", DEFAULT_MATCHING_PRECEDENCE)


def default_priority_level_configuration(obj: Obj) -> None:
    spec = _struct(obj, "spec")
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if isinstance(exempt, dict):
        _set(exempt, "nominalConcurrencyShares", 0)
        _set(exempt, "lendablePercent", 0)
    if not isinstance(limited, dict):
        return
    _set(limited, "nominalConcurrencyShares", DEFAULT_NOMINAL_CONCURRENCY_SHARES)
    _set(limited, "lendablePercent", 0)
    queuing = (limited.get("limitResponse") or {}).get("queuing")
    if isinstance(queuing, dict):
        _unset_int(queuing, "handSize", DEFAULT_HAND_SIZE)
        _unset_int(queuing, "queues", DEFAULT_QUEUES)
        _unset_int(queuing, "queueLengthLimit", DEFAULT_QUEUE_LENGTH_LIMIT)
