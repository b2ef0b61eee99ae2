# Two commands on a fresh machine (each creates the pinned environment in .venv first):
#   make run     the embedded default pipeline (config/config.yaml): every figure at small scale
#   make test    the test suite (unit, workflow, real-data and end-to-end tests)
# Pass Snakemake/pytest arguments with ARGS="...", e.g. make run ARGS="--configfile config/archive.yaml".

VENV ?= .venv
PYTHON ?= python3
CORES ?= 2
ARGS ?=

.PHONY: run test env lint

env: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q -r requirements.txt
	$(VENV)/bin/python -m pip install -q --no-deps -e .
	touch $@

run: env
	$(VENV)/bin/snakemake --cores $(CORES) $(ARGS)

test: env
	$(VENV)/bin/python -m pytest -q $(ARGS)

lint: env
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakemake --lint
