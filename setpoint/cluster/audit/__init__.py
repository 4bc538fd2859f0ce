"""API auditing, as kube-apiserver's (k8s.io/apiserver pkg/audit, plugin/pkg/audit/log).

``policy.py`` reads and checks the ``--audit-policy-file`` and decides each request's level;
``context.py`` is one request's audit event, which admission plugins annotate; ``event.py``
fills the event as request.go does; ``logbackend.py`` writes it, one JSON line per stage,
buffered off the request's path. The HTTP front (``endpoints/auditing.py``) drives them:
the Audit-Id header on every answer, the stages of each request the policy audits."""
