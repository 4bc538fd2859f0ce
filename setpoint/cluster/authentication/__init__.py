"""Who a request comes from: service account tokens, TLS material, kubeconfig."""
