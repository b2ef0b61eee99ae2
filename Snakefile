# initmem: "Do Deep Networks Forget Initialization?" from raw CIFAR-10 to every figure.
# Default: the small embedded config. Paper scale: --configfile config/paper.yaml (or --profile slurm).
from snakemake.utils import min_version, validate

min_version("9.0")


# A config file that defines `studies` (config/paper.yaml, your own study) replaces the embedded
# default entirely: Snakemake would otherwise merge it over the default key by key, and small-scale
# values could leak into the paper scale. A config file without `studies` (config/archive.yaml)
# only overrides settings of the default.
if "studies" not in config:

    configfile: "config/config.yaml"


validate(config, "config/schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


rule all:
    input:
        ALL_TABLES,
        ALL_FIGURES,
    default_target: True


include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/theory.smk"
