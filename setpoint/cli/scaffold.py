"""The files ``setpoint init`` writes: an operator project, as ``kubebuilder init && kubebuilder
create api`` lays one out (an API type, a controller, tests on a real API server, an image,
a Makefile with test/run/manifests/deploy), in Python.

Each template is plain text with ``{{name}}`` placeholders (Makefiles and Dockerfiles use
``$`` themselves, so ``string.Template`` would not do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Project:
    """What the templates are filled with."""

    name: str  # the project's distribution name: my-operator
    package: str  # its Python package: my_operator
    group: str  # the API group: webapp.example.com
    kind: str  # the kind: Guestbook
    setpoint: str  # what pip installs for Setpoint: "setpoint" or a checkout path

    @property
    def plural(self) -> str:
        return plural_of(self.kind)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def values(self) -> dict[str, str]:
        return {"name": self.name, "package": self.package, "group": self.group,
                "kind": self.kind, "kind_pad": " " * (len(self.kind) + 7),
                "plural": self.plural, "singular": self.singular, "setpoint": self.setpoint}


def plural_of(kind: str) -> str:
    """The plural resource name of a kind, as kubebuilder guesses it (flect.Pluralize)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    return lower + "s"


def package_of(name: str) -> str:
    """A directory name as a Python package name: my-operator -> my_operator."""
    package = re.sub(r"\W", "_", name.lower()).strip("_")
    if not package or package[0].isdigit():
        package = "operator_" + package
    return package


def render(project: Project) -> dict[str, str]:
    """Relative path -> contents of every file of the project."""
    values = project.values()

    def fill(text: str) -> str:
        return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], text)

    return {fill(path): fill(text) for path, text in FILES.items()}


PYPROJECT = '''\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{{name}}"
version = "0.1.0"
description = "A Kubernetes operator for {{kind}} resources, written with Setpoint"
requires-python = ">=3.11"
dependencies = ["setpoint>=0.1"]

[project.optional-dependencies]
test = ["pytest>=8", "pytest-asyncio>=0.23"]

[tool.setuptools]
packages = ["{{package}}"]

[tool.pytest.ini_options]
# Setpoint's pytest plugin gives the fixtures (setpoint_cluster, k8s, run_manager,
# wait_for, faults); its tests are coroutines, run by pytest-asyncio
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
testpaths = ["tests"]
'''

API = '''\
"""The {{kind}} custom resource ({{plural}}.{{group}}/v1).

Its CRD is generated from this class: ``setpoint generate crds {{package}}.api``. Edit the
spec and status, then run ``make manifests`` to write the CRD again.
"""

from __future__ import annotations

from pydantic import Field

from setpoint.resources import ConditionedStatus, CustomResource, Model, PrinterColumn

GROUP = "{{group}}"


class {{kind}}Spec(Model):
    """What a {{kind}} should be."""

    message: str = Field("hello", description="What the {{kind}}'s ConfigMap holds.")


class {{kind}}Status(ConditionedStatus):
    """What the operator last saw: ``conditions`` (``Ready``) and ``observedGeneration``."""


class {{kind}}(CustomResource, group=GROUP, version="v1",
{{kind_pad}}printer_columns=[
{{kind_pad}}    PrinterColumn("Ready", "string",
{{kind_pad}}                  \'.status.conditions[?(@.type=="Ready")].status\'),
{{kind_pad}}    PrinterColumn("Message", "string", ".spec.message"),
{{kind_pad}}    PrinterColumn.age()]):
    """A {{kind}}: its message is published as the ConfigMap "<name>-config"."""

    spec: {{kind}}Spec = {{kind}}Spec()
    status: {{kind}}Status = {{kind}}Status()
'''

CONTROLLER = '''\
"""The {{kind}} controller: per {{kind}}, a ConfigMap "<name>-config" holding its message.

The reconcile is level-triggered: it is called with the {{kind}} as the cache holds it now,
whatever changed (the {{kind}}, or its ConfigMap, which it owns), and it states what should
exist. ``ctx.create_or_update`` creates the ConfigMap or brings it back to that, with the
{{kind}} as its controller owner (deleting the {{kind}} deletes it), and sends nothing when it
already is; the ``Ready`` condition and ``observedGeneration`` then say which spec it was
made for. Run it with ``setpoint run {{package}}.controller:manager`` (``make run``).
"""

from __future__ import annotations

from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.runtime import Context, Controller, Manager, ManagerSettings, Result

from {{package}}.api import {{kind}}

{{singular}}_controller = Controller.for_({{kind}}, name="{{singular}}").owns(ConfigMap)


def config_map_name({{singular}}: {{kind}}) -> str:
    return f"{{{singular}}.metadata.name}-config"


@{{singular}}_controller.reconcile
async def reconcile(ctx: Context[{{kind}}], {{singular}}: {{kind}}) -> Result:
    name = config_map_name({{singular}})

    def wanted(cm: ConfigMap) -> None:
        cm.data = {"message": {{singular}}.spec.message}

    _, operation = await ctx.create_or_update(ConfigMap(name=name), wanted)
    if operation != "unchanged":
        ctx.events.normal("ConfigMapSynced", f"ConfigMap {name} {operation}")
    ctx.set_condition("Ready", True, reason="ConfigMapSynced",
                      message=f"ConfigMap {name} holds the message")
    {{singular}}.status.observed_generation = {{singular}}.metadata.generation
    await ctx.update_status({{singular}})  # sends only what changed
    return Result()


manager = Manager([{{singular}}_controller], settings=ManagerSettings(name="{{name}}"))
'''

TEST = '''\
"""The {{kind}} controller on a fresh embedded Kubernetes API server per test (Setpoint's
pytest plugin). ``pytest --kubeconfig=FILE`` runs the same tests on a real cluster."""

from __future__ import annotations

from setpoint.client import Client
from setpoint.resources.models.core_v1 import ConfigMap
from setpoint.testing import Faults, SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter

from {{package}}.api import {{kind}}, {{kind}}Spec
from {{package}}.controller import manager


def is_ready({{singular}}: {{kind}}) -> bool:
    return any(c.type == "Ready" and c.status == "True"
               for c in {{singular}}.status.conditions or [])


async def test_a_{{singular}}_gets_its_config_map_and_becomes_ready(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install({{kind}})
    await run_manager(manager)
    created = await k8s.create({{kind}}(name="sample", spec={{kind}}Spec(message="hi")))

    ready = await wait_for({{kind}}, "sample", is_ready)
    assert ready.status.observed_generation == created.metadata.generation
    cm = await k8s.get(ConfigMap, "sample-config")
    assert cm.data == {"message": "hi"}
    (owner,) = cm.metadata.owner_references
    assert (owner.kind, owner.uid) == ("{{kind}}", created.metadata.uid)


async def test_a_changed_or_edited_config_map_is_brought_back(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install({{kind}})
    await run_manager(manager)
    await k8s.create({{kind}}(name="sample", spec={{kind}}Spec(message="one")))
    await wait_for(ConfigMap, "sample-config")

    await k8s.patch({{kind}}, "sample", {"spec": {"message": "two"}})
    await wait_for(ConfigMap, "sample-config", lambda cm: cm.data == {"message": "two"})
    await k8s.patch(ConfigMap, "sample-config", {"data": {"message": "edited by hand"}})
    await wait_for(ConfigMap, "sample-config", lambda cm: cm.data == {"message": "two"})


async def test_a_failed_write_is_retried(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, faults: Faults) -> None:
    await setpoint_cluster.install({{kind}})
    failure = faults.fail(verb="create", resource="configmaps", status=500, times=1)
    await run_manager(manager)
    await k8s.create({{kind}}(name="sample"))
    await wait_for({{kind}}, "sample", is_ready)
    assert failure.hits == 1


async def test_the_operator_needs_only_its_generated_rbac(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter) -> None:
    await setpoint_cluster.install({{kind}})
    await run_manager(manager, rbac=True)  # as its own ServiceAccount, with its own RBAC
    await k8s.create({{kind}}(name="sample"))
    await wait_for({{kind}}, "sample", is_ready)
'''

MAKEFILE = '''\
# make test | run | manifests | deploy | docker-build (IMG=registry.example/{{name}}:0.1)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Where pip gets Setpoint from (a package name, a checkout or a wheel)
SETPOINT ?= {{setpoint}}
IMG ?= {{name}}:dev
NAMESPACE ?= {{name}}-system

.PHONY: test run manifests deploy undeploy docker-build

$(STAMP): pyproject.toml
\t$(PYTHON) -m venv $(VENV)
\t$(BIN)/pip install --quiet "$(SETPOINT)" -e '.[test]'
\ttouch $(STAMP)

test: $(STAMP)
\t$(BIN)/pytest -q

# against $$KUBECONFIG, else ~/.kube/config, else the cluster `setpoint cluster up` started
run: $(STAMP)
\t$(BIN)/setpoint run {{package}}.controller:manager

manifests: $(STAMP)
\tmkdir -p config
\t$(BIN)/setpoint generate crds {{package}}.api -o config/crd.yaml
\t$(BIN)/setpoint generate manifests {{package}}.controller --image $(IMG) \\
\t\t--namespace $(NAMESPACE) -o config/operator.yaml

deploy: manifests
\tkubectl apply -f config/crd.yaml
\tkubectl apply -f config/operator.yaml

undeploy:
\tkubectl delete --ignore-not-found -f config/operator.yaml -f config/crd.yaml

# The image installs Setpoint from a wheel built here (dist/), then this project
docker-build: $(STAMP)
\trm -rf dist && $(BIN)/pip wheel --quiet --no-deps "$(SETPOINT)" -w dist
\tdocker build -t $(IMG) .
'''

DOCKERFILE = '''\
# The operator's image: `make docker-build IMG=...` (Setpoint's wheel is put in dist/ first)
FROM python:3.12-slim
WORKDIR /operator
COPY dist/ /tmp/wheels/
COPY pyproject.toml ./
COPY {{package}}/ {{package}}/
RUN pip install --no-cache-dir /tmp/wheels/*.whl . && rm -rf /tmp/wheels
USER 65532:65532
# setpoint generate manifests runs: setpoint run {{package}}.controller:manager
ENTRYPOINT ["setpoint"]
CMD ["run", "{{package}}.controller:manager", "--http-address", "0.0.0.0:8081"]
'''

README = '''\
# {{name}}

A Kubernetes operator for `{{kind}}` resources (`{{plural}}.{{group}}/v1`), written with
Setpoint. For each {{kind}} it keeps a
ConfigMap `<name>-config` holding `spec.message`, owned by the {{kind}}, and reports a
`Ready` condition and `status.observedGeneration`.

| file | what it is |
|---|---|
| `{{package}}/api.py` | the `{{kind}}` class; its CRD is generated from it |
| `{{package}}/controller.py` | the level-triggered reconcile and the `manager` that runs it |
| `tests/test_controller.py` | tests on a fresh embedded API server per test |
| `Makefile` | `test`, `run`, `manifests`, `deploy`, `docker-build` |
| `Dockerfile` | the operator's image |

```sh
make test                      # a virtualenv in .venv, then the tests
make manifests                 # config/crd.yaml and config/operator.yaml (RBAC, Deployment)
```

Try it on Setpoint's embedded cluster:

```sh
.venv/bin/setpoint cluster up --memory --kubeconfig /tmp/{{name}}.kubeconfig   # shell 1
export KUBECONFIG=/tmp/{{name}}.kubeconfig                                    # shell 2
.venv/bin/setpoint generate crds {{package}}.api | kubectl apply -f -
make run
kubectl apply -f - <<'YAML'                                                   # shell 3
apiVersion: {{group}}/v1
kind: {{kind}}
metadata: {name: sample}
spec: {message: hello}
YAML
kubectl get {{plural}}
```

Deploy it to a cluster: `make docker-build deploy IMG=registry.example/{{name}}:0.1` (push
the image where the cluster can pull it first).
'''

GITIGNORE = '''\
.venv/
__pycache__/
*.egg-info/
dist/
config/
'''

DOCKERIGNORE = '''\
.venv
tests
config
'''

FILES = {
    "pyproject.toml": PYPROJECT,
    "{{package}}/__init__.py": '"""The {{kind}} operator."""\n',
    "{{package}}/api.py": API,
    "{{package}}/controller.py": CONTROLLER,
    "tests/__init__.py": "",
    "tests/test_controller.py": TEST,
    "Makefile": MAKEFILE,
    "Dockerfile": DOCKERFILE,
    "README.md": README,
    ".gitignore": GITIGNORE,
    ".dockerignore": DOCKERIGNORE,
}
