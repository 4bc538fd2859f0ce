"""Where a write stops to ask admission webhooks, without the write path doing I/O.

The REST storage runs a write as a generator of :class:`AdmissionPoint`: after the built-in
admission it yields a ``mutating`` point (the answer is the object the webhooks made of it, or
None when they changed nothing), after validation a ``validating`` one (answered with None or
an exception). Whoever drives the generator decides how the points are answered:
:func:`run_sync` answers every point at once with "no change", for the server's own
controllers and for requests when no webhook is configured; the HTTP front awaits the
configured webhooks (:mod:`setpoint.cluster.admission.webhook.dispatcher`).

Reads and writes of a custom resource whose CRD converts by webhook also stop at a
:class:`ConversionPoint` wherever an object changes version.

Everything before a point runs without awaiting, so nothing else writes in between; across a
point other requests may run, so a write re-reads what it depends on after its points and
raises :class:`Changed` when the stored object moved on, and the driver runs it again from
the start, as the apiserver retries its guaranteed update.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeVar

from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery.objects import Obj

T = TypeVar("T")

MUTATING: Literal["mutating"] = "mutating"
VALIDATING: Literal["validating"] = "validating"


@dataclass(slots=True)
class Reinvocation:
    """One write's ``ReinvocationContext`` (k8s.io/apiserver pkg/admission/reinvocation.go):
    when a mutating webhook changed the object, the whole mutating chain runs once more,
    the built-in plugins first, then the webhooks at a second mutating point."""

    is_reinvoke: bool = False  # the second point's
    # the built-in plugins, run again, changed what the webhooks had made of the object
    changed_since_webhooks: bool = False
    webhooks: Any = None  # the webhook dispatcher's state between its two rounds


@dataclass(slots=True)
class AdmissionPoint:
    """One request's state at a point of admission, as the webhooks are told it."""

    phase: Literal["mutating", "validating"]
    operation: str  # CREATE, UPDATE or DELETE
    rt: ResourceType
    namespace: str
    name: str
    obj: Obj | None
    old: Obj | None
    dry_run: bool
    subresource: str = ""
    options: Obj | None = field(default_factory=dict)  # None: a CONNECT has none
    # (group, version, kind) of the object, when it is not the resource's own kind: the
    # Binding or Eviction posted to a pod's subresource
    kind: tuple[str, str, str] | None = None
    # the write's warnings so far, in the order they arose: the webhooks' are added here as
    # they answer (the request's warning recorder, endpoints/filters/warning.go), so the
    # strategy's and the managed-fields warnings that follow come after them; None: the
    # driver returns them beside the result
    warnings: list[str] | None = field(default=None, repr=False, compare=False)
    # a mutating point whose built-in plugins run again after the webhooks changed the
    # object; None: the webhooks' reinvocation happens at this point alone
    reinvocation: Reinvocation | None = field(default=None, repr=False, compare=False)


@dataclass
class ConversionPoint:
    """Objects of a custom resource that only its CRD's conversion webhook can bring to
    ``api_version``; the answer is the converted objects, in order."""

    rt: ResourceType
    objects: list[Obj]
    api_version: str
    # one object decoded or encoded alone (a read of one, a write), not a list's items:
    # webhook_converter.go ``Convert`` words its errors differently for the two
    single: bool = False


class Attributes(NamedTuple):
    """What a built-in admission plugin is told of a write (k8s.io/apiserver/pkg/admission
    ``Attributes``): the operation, the resource, the object and the stored one, and the
    requesting user (``GetUserInfo``; None for the server's own writes), whether it is a dry
    run (``IsDryRun``) and its subresource (``GetSubresource``; those two told to the
    validating plugins of an update and to the plugins that run last), and the write's
    warning list, told to the validating plugins (``warning.AddWarning``: a plugin's warnings
    follow the strategy's, before the validating webhooks'). (A named tuple: immutable, and
    built for every write at a fraction of a frozen dataclass's cost.)"""

    operation: str  # CREATE or UPDATE
    rt: ResourceType
    obj: Obj
    old: Obj | None
    user: Obj | None = None
    dry_run: bool = False
    subresource: str = ""
    warnings: list[str] | None = None
    # the operation's options (CreateOptions, UpdateOptions), told to the validating
    # plugins (``GetOperationOptions``: a ValidatingAdmissionPolicy's ``request.options``)
    options: Obj | None = None
    # the name as the request gave it (``GetName``: "" for a create by generateName, whose
    # object is named by then), when told
    name: str | None = None


Point = AdmissionPoint | ConversionPoint
Steps = Generator[Point, Any, T]
"""A request that yields the points where it needs a webhook and returns its result."""


class Changed(Exception):
    """The stored object changed while webhooks were consulted: run the write again."""


def connect_steps(rt: ResourceType, namespace: str, name: str, subresource: str,
                  obj: Obj, warnings: list[str]) -> Steps[None]:
    """A CONNECT (``pods/exec``, ``attach``, ``portforward``): its options object passes
    admission as its own kind, with no operation options, before anything is looked up
    (k8s.io/apiserver pkg/endpoints/handlers/rest.go ConnectResource); the webhooks'
    warnings go to ``warnings`` as they answer, kept when a later one refuses."""
    kind = ("", "v1", str(obj["kind"]))
    mutated = yield AdmissionPoint(MUTATING, "CONNECT", rt, namespace, name, obj, None, False,
                                   subresource, None, kind, warnings)
    yield AdmissionPoint(VALIDATING, "CONNECT", rt, namespace, name,
                         mutated if mutated is not None else obj, None, False, subresource,
                         None, kind, warnings)


def subresource_create_steps(rt: ResourceType, namespace: str, name: str, subresource: str,
                             kind: tuple[str, str, str], body: Any, opts: WriteOptions,
                             act: Callable[[Any], T]) -> Steps[T]:
    """A POST to a subresource that acts rather than stores (``pods/binding``,
    ``pods/eviction``, ``serviceaccounts/token``): the body passes admission as its own kind,
    then ``act`` runs on it."""
    options = opts.options_object("CreateOptions")
    obj = body if isinstance(body, dict) else None
    mutated = yield AdmissionPoint(MUTATING, "CREATE", rt, namespace, name, obj, None,
                                   opts.dry_run, subresource, options, kind)
    if mutated is not None:
        body = mutated
    yield AdmissionPoint(VALIDATING, "CREATE", rt, namespace, name,
                         body if isinstance(body, dict) else None, None, opts.dry_run,
                         subresource, options, kind)
    return act(body)


def run_sync(steps: Steps[T]) -> T:
    """Run a request answering every admission point with "no change".

    Only the server's own controllers (garbage collector, namespace cleanup) meet a
    conversion point here: they read and change metadata alone, which every version of a
    resource shares, so their objects are relabelled rather than sent to the webhook."""
    try:
        point = next(steps)
        while True:
            if isinstance(point, ConversionPoint):
                point = steps.send([{**o, "apiVersion": point.api_version}
                                    for o in point.objects])
            else:
                point = steps.send(None)
    except StopIteration as done:
        result: T = done.value  # what the steps return: a T, as Steps[T] says
        return result


async def run_async(steps: Steps[T], answer: Callable[[Point], Awaitable[Any]]) -> T:
    """Run a write awaiting ``answer`` at each admission point; an exception raised by
    ``answer`` is thrown into the write, so that its clean-up runs, and propagates."""
    try:
        point = next(steps)
        while True:
            try:
                reply = await answer(point)
            except BaseException as exc:
                point = steps.throw(exc)
            else:
                point = steps.send(reply)
    except StopIteration as done:
        result: T = done.value  # what the steps return: a T, as Steps[T] says
        return result
