"""The status of ServiceMonitors and PrometheusRules: which Prometheus objects selected
them and whether each took them into its configuration.

As the prometheus-operator does (``status.bindings``, pkg/apis/monitoring/v1/types.go
``ConfigResourceStatus``/``WorkloadBinding``, and its proposal
Documentation/proposals/202501-configuration-object-status-subresource.md), the workload's
controller writes the binding when it renders a configuration: a binding per selecting
Prometheus with one condition, ``Accepted``. Beside them, the object's own
``observedGeneration`` and conditions ``Reconciled`` and ``Accepted`` summarise them, so
that ``kubectl wait --for=condition=Accepted`` works on the object itself.

``Accepted`` of one binding:

- True (``Accepted``) when the configuration generated with this generation of the object
  passed validation and was written;
- False (``InvalidConfiguration``) when validation failed because of this object (the
  error names its rule file or its scrape pool);
- False (``ConfigurationNotRolledOut``) when validation failed because of another object
  and this generation of it was never rolled out; an unchanged object whose generation was
  already accepted keeps its condition, since the servers keep that configuration.

A status is written only when it changes (the writer sends only the difference from the
cached object, and nothing when there is none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from operators.monitoring.resources.common import GROUP, WorkloadBinding
from operators.monitoring.resources.prometheusrule import PrometheusRule
from operators.monitoring.resources.servicemonitor import ServiceMonitor
from operators.monitoring.rulefiles import file_name
from setpoint.resources import Condition
from setpoint.runtime import Context

RESOURCE = "prometheuses"
ACCEPTED, RECONCILED = "Accepted", "Reconciled"
ConfigObject = ServiceMonitor | PrometheusRule


def blamed(obj: ConfigObject, problem: str) -> bool:
    """Whether a validation error names ``obj``: a PrometheusRule by its rule file, a
    ServiceMonitor by its scrape pools (``serviceMonitor/<ns>/<name>/<i>``)."""
    if isinstance(obj, PrometheusRule):
        return file_name(obj) in problem
    return f"serviceMonitor/{obj.metadata.namespace}/{obj.metadata.name}/" in problem


def _accepted(binding: WorkloadBinding | None) -> Condition | None:
    return next((c for c in (binding.conditions if binding else None) or ()
                 if c.type == ACCEPTED), None)


def wanted_condition(previous: WorkloadBinding | None, generation: int | None,
                     configuration: str | None, problem: str | None,
                     obj: ConfigObject) -> tuple[bool, str, str]:
    """The ``Accepted`` condition a Prometheus gives an object it selects: (status,
    reason, message)."""
    if problem is None:
        return True, "Accepted", f"in configuration {configuration}"
    if blamed(obj, problem):
        return False, "InvalidConfiguration", problem
    before = _accepted(previous)
    if before is not None and before.status == "True" \
            and before.observed_generation == generation:
        return True, str(before.reason), str(before.message or "")
    return False, "ConfigurationNotRolledOut", (
        "not rolled out: the configuration failed validation because of another object "
        f"({problem[:300]})")


def _set(binding: WorkloadBinding, status: bool, reason: str, message: str,
         generation: int | None) -> None:
    text = "True" if status else "False"
    current = _accepted(binding)
    if current is not None and (current.status, current.reason, current.message,
                                current.observed_generation) == (text, reason, message,
                                                                 generation):
        return
    when: datetime | None
    if current is None or current.status != text:  # the condition moved
        when = datetime.now(UTC).replace(microsecond=0)
    else:
        when = current.last_transition_time
    binding.conditions = [Condition(type=ACCEPTED, status=text, reason=reason,
                                    message=message, observed_generation=generation,
                                    last_transition_time=when)]


def _summarise(ctx: Context[Any], obj: ConfigObject) -> None:
    status = obj.status
    status.observed_generation = obj.metadata.generation
    bindings = status.bindings or []
    names = ", ".join(f"{b.namespace}/{b.name}" for b in bindings)
    if not bindings:
        ctx.set_condition(RECONCILED, True, reason="NotSelected",
                          message="no Prometheus selects it", obj=obj)
        ctx.set_condition(ACCEPTED, None, reason="NotSelected",
                          message="no Prometheus selects it", obj=obj)
        return
    ctx.set_condition(RECONCILED, True, reason="Bound",
                      message=f"selected by Prometheus {names}", obj=obj)
    rejected = [(b, c) for b in bindings if (c := _accepted(b)) and c.status != "True"]
    if rejected:
        binding, condition = rejected[0]
        ctx.set_condition(ACCEPTED, False, reason=str(condition.reason),
                          message=f"Prometheus {binding.namespace}/{binding.name}: "
                          f"{condition.message}", obj=obj)
    else:
        ctx.set_condition(ACCEPTED, True, reason="Accepted",
                          message=f"accepted by Prometheus {names}", obj=obj)


def _key(binding: WorkloadBinding) -> tuple[str, str, str, str]:
    return binding.group, binding.resource, binding.namespace, binding.name


async def record(ctx: Context[Any], workload: tuple[str, str],
                 candidates: Iterable[ConfigObject], selected: Sequence[ConfigObject],
                 configuration: str | None, problem: str | None,
                 live_workloads: set[tuple[str, str]]) -> None:
    """Bring every candidate's binding to ``workload`` (namespace, name) up to date: present
    with its ``Accepted`` condition when ``selected`` holds it, absent otherwise; bindings to
    Prometheus objects no longer in ``live_workloads`` are dropped too. ``problem`` is the
    validation error of the configuration (None: it was written as ``configuration``)."""
    chosen = {(o.metadata.namespace, o.metadata.name) for o in selected}
    own = (GROUP, RESOURCE, *workload)
    for cached in candidates:
        obj = cached.model_copy(deep=True)
        status = obj.status
        bindings = [b for b in status.bindings or ()
                    if _key(b) != own and (b.group != GROUP or b.resource != RESOURCE
                                           or (b.namespace, b.name) in live_workloads)]
        if (obj.metadata.namespace, obj.metadata.name) in chosen:
            previous = next((b for b in status.bindings or () if _key(b) == own), None)
            binding = previous.model_copy(deep=True) if previous else WorkloadBinding(
                group=GROUP, resource=RESOURCE, namespace=workload[0], name=workload[1])
            _set(binding, *wanted_condition(previous, obj.metadata.generation,
                                            configuration, problem, obj),
                 obj.metadata.generation)
            bindings.append(binding)
        bindings.sort(key=_key)
        status.bindings = bindings or None
        _summarise(ctx, obj)
        await ctx.update_status(obj)
