"""``/healthz``, ``/livez``, ``/readyz``: kube-apiserver 1.32's named health checks.

k8s.io/apiserver pkg/server/healthz/healthz.go: each endpoint runs its checks in the order
they were installed. All passing, the answer is ``ok`` (with ``?verbose``, one ``[+]<name>
ok`` line each and ``<endpoint> check passed``); any failing, a 500 listing every check
(``[-]<name> failed: reason withheld``) and ``<endpoint> check failed``. ``?exclude=<name>``
skips a check (``[+]<name> excluded: ok``). ``/<endpoint>/<name>`` runs one check: ``ok``,
or a 500 ``internal server error: <its error>``; a name not installed is Go's 404.

The checks are kube-apiserver's: ``ping``, ``log``, ``etcd`` (readyz adds
``etcd-readiness`` and ``informer-sync``), one ``poststarthook/<name>`` per post-start hook
in the order kube-apiserver 1.32 registers them with its default feature gates
(pkg/controlplane, kube-aggregator pkg/apiserver/apiserver.go), the aggregator's boot
sequence check ``autoregister-completion`` after ``kube-apiserver-autoregistration``
(pkg/controlplane/apiserver/aggregator.go), and readyz's ``shutdown`` last. The ones this
server has a state for report it; the others have nothing that can fail here and pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from setpoint.cluster.endpoints.http import Request, Response

if TYPE_CHECKING:
    from setpoint.cluster.endpoints.parts import ServingState

Check = Callable[[], str | None]  # the check's error, None when it passes

POST_START_HOOKS = (
    "start-apiserver-admission-initializer", "generic-apiserver-start-informers",
    "priority-and-fairness-config-consumer", "priority-and-fairness-filter",
    "storage-object-count-tracker-hook", "start-apiextensions-informers",
    "start-apiextensions-controllers", "crd-informer-synced",
    "start-system-namespaces-controller", "start-cluster-authentication-info-controller",
    "start-kube-apiserver-identity-lease-controller",
    "start-kube-apiserver-identity-lease-garbage-collector",
    "start-legacy-token-tracking-controller", "start-service-ip-repair-controllers",
    "rbac/bootstrap-roles", "scheduling/bootstrap-system-priority-classes",
    "priority-and-fairness-config-producer", "bootstrap-controller",
    "aggregator-reload-proxy-client-cert", "start-kube-aggregator-informers",
    "apiservice-status-local-available-controller",
    "apiservice-status-remote-available-controller", "apiservice-registration-controller",
    "apiservice-discovery-controller", "kube-apiserver-autoregistration",
)
LATE_POST_START_HOOKS = ("apiservice-openapi-controller", "apiservice-openapiv3-controller")
AUTOREGISTER_COMPLETION = "autoregister-completion"
ENDPOINTS = ("healthz", "livez", "readyz")


def check_names(endpoint: str) -> list[str]:
    """The checks of ``endpoint`` in the order kube-apiserver installs them."""
    names = ["ping", "log", "etcd"]
    if endpoint == "readyz":
        names += ["etcd-readiness", "informer-sync"]
    names += [f"poststarthook/{hook}" for hook in POST_START_HOOKS]
    names.append(AUTOREGISTER_COMPLETION)
    names += [f"poststarthook/{hook}" for hook in LATE_POST_START_HOOKS]
    if endpoint == "readyz":
        names.append("shutdown")
    return names


def health_checks(state: ServingState) -> dict[str, Check]:
    """The checks whose state this server has: the autoregistration hook and its
    completion, and readyz's ``shutdown``."""
    def autoregistration() -> str | None:
        hook = state.autoregister
        return None if hook is not None and hook.started \
            else "not finished"  # postStartHookHealthz

    def completion() -> str | None:
        hook = state.autoregister
        if hook is None:
            return "not started"
        return hook.completion_error()

    def shutdown() -> str | None:
        return None if state.ready else "process is shutting down"

    return {"poststarthook/kube-apiserver-autoregistration": autoregistration,
            AUTOREGISTER_COMPLETION: completion, "shutdown": shutdown}


def _http_error(message: str, status: int) -> Response:
    """Go's ``http.Error``."""
    return Response(f"{message}\n".encode(), status, "text/plain; charset=utf-8",
                    {"X-Content-Type-Options": "nosniff"})


class HealthChecks:
    """The three endpoints over checks of which some are known to this server."""

    def __init__(self, checks: dict[str, Check]) -> None:
        self._checks = checks  # name -> check; a name not given always passes

    def __repr__(self) -> str:
        return f"HealthChecks({sorted(self._checks)})"

    def _run(self, name: str) -> str | None:
        check = self._checks.get(name)
        return check() if check is not None else None

    def root(self, endpoint: str, request: Request) -> Response:
        """The answer to ``/<endpoint>``."""
        return self._root(endpoint, check_names(endpoint), request)

    def single(self, endpoint: str, name: str) -> Response | None:
        """The answer to ``/<endpoint>/<name>``, or None when no check has that name (the
        caller's 404)."""
        if name not in check_names(endpoint):
            return None
        error = self._run(name)
        if error is not None:
            return _http_error(f"internal server error: {error}", 500)
        return Response(b"ok", 200, "text/plain; charset=utf-8")

    def _root(self, endpoint: str, names: list[str], request: Request) -> Response:
        excluded = set(request.query_values("exclude"))
        lines: list[str] = []
        failed = False
        for name in names:
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok\n")
            elif self._run(name) is not None:
                # the reason stays out of this public answer (and in /<endpoint>/<name>)
                lines.append(f"[-]{name} failed: reason withheld\n")
                failed = True
            else:
                lines.append(f"[+]{name} ok\n")
        if excluded:
            quoted = ",".join(f'"{name}"' for name in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for "
                         f"{quoted}\n")
        if failed:
            return _http_error(f"{''.join(lines)}{endpoint} check failed", 500)
        headers = {"X-Content-Type-Options": "nosniff"}
        if "verbose" not in request.query:
            return Response(b"ok", 200, "text/plain; charset=utf-8", headers)
        body = f"{''.join(lines)}{endpoint} check passed\n"
        return Response(body.encode(), 200, "text/plain; charset=utf-8", headers)
