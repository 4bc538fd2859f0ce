"""The ValidatingAdmissionPolicy admission plugin (k8s.io/apiserver
pkg/admission/plugin/policy/validating)."""
