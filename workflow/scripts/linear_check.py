"""Snakemake script: Figure 9 (PDF + PNG) and results/tables/linear_check.csv from the linear-network check."""

import _path  # noqa: F401

import initmem.figures.style  # noqa: F401  (Type 42 fonts, 200-dpi PNGs)
from initmem.figures.linear import write_linear_check
from initmem.scriptjobs import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    rows = write_linear_check(snakemake.output.pdf, snakemake.output.png, snakemake.output.table)  # noqa: F821
    for r in rows:
        print(f"{r['panel']} {r['check']}: measured {r['measured']:.4g}, predicted {r['predicted']:.4g}")
