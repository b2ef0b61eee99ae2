"""Snakemake script: one paper figure (PDF + PNG) from the per-study tables it needs."""

import _path  # noqa: F401

from initmem.scriptjobs import figure_file, log_to

with log_to(snakemake.log[0]):  # noqa: F821
    figure_file(snakemake.wildcards.fig, snakemake.input, snakemake.output.pdf, snakemake.output.png)  # noqa: F821
