# initmem: "Do Deep Networks Forget Initialization?" from raw CIFAR-10 to every figure.
# Default: the small embedded config. Paper scale: --configfile config/paper.yaml (or --profile slurm).
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
from initmem.pipeline.configfiles import load_config  # noqa: E402
from initmem.spec import ConfigError  # noqa: E402


# The embedded default (config/config.yaml), then each --configfile merged over it key by key, as
# Snakemake merges config files, except `studies`: a file that defines studies replaces them as a
# whole, so the default's demo studies never leak into a paper run. Read here rather than with the
# configfile: directive so that 1e-3 is a number and a bad key is one line naming it and its file.
try:
    _layered = load_config(workflow.overwrite_configfiles, workflow.config_settings.config,
                           default=Path(workflow.basedir) / "config/config.yaml",
                           schema=Path(workflow.basedir) / "config/schema.yaml")
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")
config.clear()
config.update(_layered)


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


rule all:
    input:
        ALL_TABLES,
        ALL_FIGURES,
        # the per-study tables and every run file too: one that a failed collection removed, or a
        # user deleted, is made again by a plain rerun (Snakemake remakes a missing intermediate
        # file only when something asks for it; a run file is cut again from its pack file)
        study_tables(STUDIES),
        [f for study in STUDIES for f in run_files(study)],
    default_target: True


# Before any job starts: no pack that a live job still trains is started again (_before_the_jobs, common.smk).
onstart:
    _before_the_jobs()


# Provenance and the summary of diverged runs, once the jobs have run (_after_the_jobs, common.smk).
onsuccess:
    _after_the_jobs(succeeded=True)


onerror:
    _after_the_jobs(succeeded=False)


include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/theory.smk"
