"""Helpers that several test files share, kept apart from the test modules: pytest collects nothing
here, and a test file imports what it needs from here (``from helpers.packs import pack_runs``),
never from another test file (tests/test_layout.py checks); the fixtures and the Snakemake helpers
stay in tests/conftest.py. This package is found as ``conftest`` is: pytest's default "prepend" import
mode puts ``tests/`` (the folder of conftest.py and the test files, with no ``__init__.py``) first on
``sys.path``.

- :mod:`helpers.packs`: a pack's tiny runs and the check that two trainers' records agree
- :mod:`helpers.clock_tier`: synthetic clock-tier histories, their runs and the claims table read from them
- :mod:`helpers.clock_figure`: Figure 10's synthetic grid
- :mod:`helpers.planner`: the planner's inputs (a measured configuration, a two-study config)
- :mod:`helpers.train_jobs`: a one-run train job as the workflow starts it, and waiting on its log
"""
