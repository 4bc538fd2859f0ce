"""Configuration objects kube-apiserver creates when it starts, as data: the API Priority
and Fairness FlowSchemas and PriorityLevelConfigurations (``flowcontrol``)."""
