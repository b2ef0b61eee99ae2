# On a fresh machine (each target creates the pinned environment in .venv first; README.md):
#   make env     the environment only (~6 GB: PyPI's CUDA build of torch)
#   make run     the embedded default pipeline (config/config.yaml): every figure at small scale, <= 5 min on 2 cores
#   make test    the test suite; the real-Slurm tests only with INITMEM_TEST_SLURM=1 (they install and start Slurm)
#   make test-fast  the edit-test loop: every test not marked slow (no Snakemake, no evidence re-analysis, no torch.compile, no real data, none over 8 s)
#                the markers (pyproject.toml): unit = not slow; workflow = Snakemake, torch.compile, the device check; slurm = real Slurm,
#                e.g. make test ARGS='-m "workflow"'; .ci/run: make lint, make test, then the slurm tests alone
# Pass Snakemake/pytest arguments with ARGS="...", e.g. make run ARGS="--configfile config/archive.yaml".

VENV ?= .venv
PYTHON ?= python3
CORES ?= 2
# pytest-xdist workers: TEST_WORKERS=0 runs in this process. --dist loadgroup: each test file runs whole on
# one worker (its module fixtures once; tests/conftest.py gives each file its xdist_group), except the
# heaviest files' tests, which go to whichever worker is free (conftest.SPLIT_FILES); the slowest are sent
# first (conftest orders them; --no-loadscope-reorder keeps that order instead of xdist's largest-group-first).
TEST_WORKERS ?= 2
DIST = --dist loadgroup --no-loadscope-reorder
ARGS ?=

.PHONY: run test test-fast env lint

env: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q -r requirements.txt
	$(VENV)/bin/python -m pip install -q --no-deps -e .
	touch $@

# A config file that is not valid YAML: Snakemake reads the --configfile files before the workflow
# and names neither file nor line, so check them first (file:line:column; silent when they are fine).
# After Ctrl-C, Snakemake's last line says where training stopped and how to resume; the trap keeps
# make's own "*** [run] Interrupt" from following it (make still exits with the interrupt's status).
run: env
	PYTHONPATH=workflow $(VENV)/bin/python -m initmem config --snakemake-args $(ARGS)
	trap 'interrupted=1' INT; $(VENV)/bin/snakemake --cores $(CORES) $(ARGS) || { status=$$?; [ -n "$$interrupted" ] || exit $$status; }

test: env
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) $(DIST) $(ARGS)

test-fast: env
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) $(DIST) -m "not slow" $(ARGS)

lint: env
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakemake --lint
