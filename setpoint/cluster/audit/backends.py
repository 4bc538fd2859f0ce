"""The backends kube-apiserver's audit flags build (k8s.io/apiserver pkg/server/options/
audit.go ``ApplyTo``): the log backend and the webhook backend, each wrapped in its mode
(``AuditBatchOptions.wrapBackend``) and, when enabled, truncation
(``AuditTruncateOptions.wrapBackend``), joined by ``audit.Union``."""

from __future__ import annotations

from setpoint.cluster.audit.backend import Backend, Union
from setpoint.cluster.audit.buffered import wrap_mode
from setpoint.cluster.audit.logbackend import LogBackend
from setpoint.cluster.audit.options import AuditOptions, AuditOptionsError
from setpoint.cluster.audit.truncate import wrap_truncate


def build_backend(options: AuditOptions) -> Backend | None:
    """``ApplyTo``'s backends, joined; None when none is enabled. Files are opened and the
    webhook's kubeconfig read here: OSError, or AuditOptionsError worded as Go's
    (``initializing audit webhook: …``)."""
    backends: list[Backend] = []
    log_options = options.log
    if log_options.path:
        log = LogBackend(log_options.path, format=log_options.format,
                         max_age=log_options.max_age, max_backups=log_options.max_backups,
                         max_size=log_options.max_size, compress=log_options.compress)
        backends.append(wrap_truncate(wrap_mode(log, log_options.batch),
                                      log_options.truncate))
    webhook_options = options.webhook
    if webhook_options.config_file:
        # (aiohttp and the kubeconfig reader only when a webhook is configured)
        from setpoint.cluster.audit.webhookbackend import WebhookBackend, WebhookConfigError

        try:
            hook = WebhookBackend.from_kubeconfig(webhook_options.config_file,
                                                  webhook_options.initial_backoff)
        except WebhookConfigError as exc:
            raise AuditOptionsError(f"initializing audit webhook: {exc}") from None
        backends.append(wrap_truncate(wrap_mode(hook, webhook_options.batch),
                                      webhook_options.truncate))
    if not backends:
        return None
    return backends[0] if len(backends) == 1 else Union(backends)
