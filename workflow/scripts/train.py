"""Snakemake script: train one pack of runs (or one run) and write its pack file (or metrics file)."""

import _path  # noqa: F401

from initmem.cli import log_to, train_pack_file

with log_to(snakemake.log[0]):  # noqa: F821
    p = snakemake.params  # noqa: F821
    out = snakemake.output  # noqa: F821
    train_pack_file(p.runs, snakemake.input.data, out.get("pack"), run_out=out.get("run"), device=p.device,  # noqa: F821
                    threads=snakemake.threads, engine=p.engine, precision=p.precision, compile=p.compile,  # noqa: F821
                    max_images=p.max_images, checkpoint_dir=p.checkpoint_dir,  # noqa: F821
                    checkpoint_every=p.checkpoint_every, keep_checkpoints=p.keep_checkpoints)
