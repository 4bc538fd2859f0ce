"""Rules of kube-apiserver 1.32 beyond the recorded corpus, one module per API area.

Each test names the rule it checks and cites the real server's source it was read from.
"""
