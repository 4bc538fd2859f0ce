"""PodSecurity: the Pod Security Standards admission plugin (k8s.io/pod-security-admission
v0.32, wired as kube-apiserver's plugin/pkg/admission/security/podsecurity/admission.go).

``levels.py`` (api/constants.go, api/helpers.go: levels, versions, the namespace labels'
policy), ``policy.py`` (policy/checks.go, helpers.go, visitor.go: results, messages, the
containers visited), ``configuration.py`` (admission/api: the PodSecurityConfiguration's
defaults and exemptions, loaded and validated), the checks by family (``checks_host.py``,
``checks_volumes.py``, ``checks_privilege.py``, ``checks_capabilities.py``,
``checks_seccomp.py``, ``checks_profiles.py``), ``evaluator.py`` (policy/registry.go: which
checks a level and version run, in which order), ``metrics.py`` (metrics/metrics.go: the
evaluations, exemptions and errors counted for ``/metrics``) and ``admission.py``
(admission/admission.go and the plugin).
"""
