"""Snakemake script: one study's metrics files -> its run table and per-epoch history table."""

import _path  # noqa: F401

from initmem.scriptjobs import collect_study, log_to

with log_to(snakemake.log[0]):  # noqa: F821
    collect_study(snakemake.input, snakemake.wildcards.study, snakemake.output.runs, snakemake.output.history)  # noqa: F821
