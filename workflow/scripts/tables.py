"""Snakemake script: per-study tables -> runs, history, spreads, beta, claims and the paper tables."""

import _path  # noqa: F401

from initmem.scriptjobs import log_to, write_tables

with log_to(snakemake.log[0]):  # noqa: F821
    write_tables(snakemake.input.runs, snakemake.input.history, dict(snakemake.output.items()))  # noqa: F821
