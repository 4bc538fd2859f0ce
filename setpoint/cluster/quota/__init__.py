"""Resource quota accounting shared by the ResourceQuota admission plugin and the quota controller.

``resources``: ResourceList arithmetic (k8s.io/apiserver/pkg/quota/v1/resources.go);
``evaluators``: what an object charges and which quotas it falls under
(kubernetes/pkg/quota/v1/evaluator/core and k8s.io/apiserver/pkg/quota/v1/generic).
"""
