# On a fresh machine (each target creates the pinned environment in .venv first; README.md):
#   make env     the environment only (~6 GB: PyPI's CUDA build of torch)
#   make run     the embedded default pipeline (config/config.yaml): every figure at small scale, <= 5 min on 2 cores
#   make test    the test suite; the real-Slurm test only with INITMEM_TEST_SLURM=1 (it installs and starts Slurm)
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
