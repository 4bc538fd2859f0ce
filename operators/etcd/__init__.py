"""The etcd operator: etcd clusters whose members are added, removed, recovered and
upgraded one at a time through etcd's own membership API.

- :mod:`operators.etcd.resource`: the ``EtcdCluster`` custom resource;
- :mod:`operators.etcd.etcdclient`: etcd's v3 HTTP/JSON gateway;
- :mod:`operators.etcd.objects`: the pods, claims and Services a cluster owns;
- :mod:`operators.etcd.observe`: one reading of pods, claims, membership and health;
- :mod:`operators.etcd.members`, :mod:`operators.etcd.upgrade`: the next step, planned;
- :mod:`operators.etcd.steps`: carrying a step out;
- :mod:`operators.etcd.health`: status, phase and conditions;
- :mod:`operators.etcd.controller`: the reconcile;
- :mod:`operators.etcd.operator`: the Manager (``setpoint run
  operators.etcd.operator:manager``).
"""
