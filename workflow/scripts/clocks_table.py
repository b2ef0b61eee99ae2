"""Snakemake script: results/tables/clocks.csv, every configuration of the configured studies with its final clocks."""

import _path  # noqa: F401

from initmem.pipeline.grid import expand_studies
from initmem.scriptjobs import log_to
from initmem.theory.calculator import write_clocks_table

with log_to(snakemake.log[0]):  # noqa: F821
    n = write_clocks_table(expand_studies(snakemake.config), snakemake.output[0])  # noqa: F821
    print(f"wrote {snakemake.output[0]}: {n} configurations")  # noqa: F821
