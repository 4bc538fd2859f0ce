"""What the HTTP front is handed when the server is assembled (``apiserver.py``), never the
server itself: the parts it serves from, the server's state it reports, and the streams it
leaves open. kube-apiserver's handler chain is built the same way, from a config of the
parts (k8s.io/apiserver pkg/server config.go ``BuildHandlerChainFunc`` over
``APIServerHandler``), and each handler below is given only the faces it reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from setpoint.cluster.admission.webhook.dispatcher import WebhookAdmission
    from setpoint.cluster.aggregator import Aggregator
    from setpoint.cluster.authentication.tokens import Identity, TokenIssuer
    from setpoint.cluster.authorization.rbac import Authorizer
    from setpoint.cluster.endpoints.metrics import Collector
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Store
    from setpoint.cluster.storage.freshness import Freshness
    from setpoint.cluster.webhook.client import WebhookClient
    from setpoint.machinery.objects import Obj


class Closeable(Protocol):
    """An open stream the server closes when it stops (a WATCH)."""

    def close(self) -> None: ...


class OpenStreams:
    """The WATCH streams being served: each closed when the server stops, so that no
    client waits on a server that is gone."""

    def __init__(self) -> None:
        self._streams: set[Closeable] = set()

    def __repr__(self) -> str:
        return f"OpenStreams({len(self._streams)} open)"

    def track(self, stream: Closeable) -> None:
        self._streams.add(stream)

    def untrack(self, stream: Closeable) -> None:
        self._streams.discard(stream)

    def close_all(self) -> None:
        for stream in list(self._streams):
            stream.close()


class PostStartHook(Protocol):
    """The ``kube-apiserver-autoregistration`` post-start hook as the health checks see it."""

    @property
    def started(self) -> bool: ...

    def completion_error(self) -> str | None: ...


@dataclass
class ServingState:
    """What the server's start and stop change and the front reports: readiness (readyz's
    ``shutdown``), the generic server's ExternalAddress, the autoregistration hook."""

    ready: bool = False
    external_address: str = "127.0.0.1:443"  # set by the start
    autoregister: PostStartHook | None = None  # once the controllers run


@dataclass(frozen=True)
class FrontParts:
    """The parts the HTTP front serves from. The webhook dispatcher and client are given
    as makers, called on first use: their modules load only when a request needs them."""

    store: Store
    freshness: Freshness
    registry: Registry
    rest: REST
    authorizer: Authorizer
    aggregator: Aggregator
    tokens: TokenIssuer
    state: ServingState
    streams: OpenStreams
    service_account_identity: Callable[[str], Identity | None]
    request_token: Callable[[str, str, Any], Obj]  # namespace, service account, body
    bind_pod: Callable[[ResourceType, str, str, Any], Obj]
    evict_pod: Callable[[ResourceType, str, str, Mapping[str, str], Any], Obj]
    admission_webhooks: Callable[[], WebhookAdmission]
    conversion_client: Callable[[], WebhookClient]
    metric_components: Iterable[Collector] = ()  # the admission plugins' own metrics

    @property
    def webhooks(self) -> WebhookAdmission:
        """The admission webhooks configured in the cluster."""
        return self.admission_webhooks()

    @property
    def webhook_client(self) -> WebhookClient:
        """The pooled client of webhook calls (a CRD's conversion webhook)."""
        return self.conversion_client()
