"""API auditing, as kube-apiserver's (k8s.io/apiserver pkg/audit, plugin/pkg/audit).

``policy.py`` reads and checks the ``--audit-policy-file`` and decides each request's level;
``context.py`` is one request's audit event, which admission plugins annotate; ``event.py``
fills the event as request.go does and encodes it; ``options.py`` reads and checks the
backends' flags (pkg/server/options/audit.go) and builds the backends: ``logbackend.py``
(a line per event, ``json`` or ``legacy``, to a file ``rotation.py`` rotates as lumberjack
does) and ``webhookbackend.py`` (EventLists POSTed to a kubeconfig's server), each in its
mode (``buffered.py``: blocking, blocking-strict, batch) and maybe truncated
(``truncate.py``), several joined by ``backend.Union``. The HTTP front
(``endpoints/auditing.py``) drives them: the Audit-Id header on every answer, the stages of
each request the policy audits."""
