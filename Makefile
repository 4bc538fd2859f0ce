# Every target creates its own virtual environment and installs from this project's files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench conformance hunt clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m setpoint.demo

test: $(STAMP) lint
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

conformance: $(STAMP)
	$(BIN)/pytest -q tests/cluster/test_conformance.py

# The flaky-test hunt: RUNS full runs, every other one with both cores loaded and the
# tests in a random order (tools/hunt_flaky.py); lists every test that failed even once.
RUNS ?= 10
hunt: $(STAMP)
	$(BIN)/python tools/hunt_flaky.py --runs $(RUNS)

bench: $(STAMP)
	$(BIN)/python bench/apiserver.py

clean:
	rm -rf $(VENV) build *.egg-info
