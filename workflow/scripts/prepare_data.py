"""Snakemake script: read CIFAR-10 from the configured source into one prepared split file."""

import _path  # noqa: F401

from initmem.cli import log_to, prepare_data

with log_to(snakemake.log[0]):  # noqa: F821
    prepare_data(snakemake.params.data, snakemake.output[0])  # noqa: F821
