"""The Widget operator: the benchmark operator of ``bench/operator.py``, written with the SDK."""
