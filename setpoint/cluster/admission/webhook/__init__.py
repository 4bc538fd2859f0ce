"""Admission webhooks: which ones a request matches, and calling them."""
