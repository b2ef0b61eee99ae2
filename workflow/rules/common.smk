# Shared helpers: expand the config's studies into runs and packs (all logic lives in initmem).
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

LIBRARY_DIR = str(Path(workflow.basedir) / "workflow")
PYTHON = sys.executable
sys.path.insert(0, LIBRARY_DIR)

from initmem.grid import expand_studies, make_packs  # noqa: E402
from initmem.io import write_yaml  # noqa: E402
from initmem.spec import ConfigError  # noqa: E402
from initmem.targets import FIGURES, buildable_figures, figure_studies, pack_mem_mb, pack_runtime_minutes  # noqa: E402

try:
    RUNS = expand_studies(config)
    PACKS = {study: make_packs(runs, config["pack"]["max_models"], config["pack"]["max_images"]) for study, runs in RUNS.items()}
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")


def check_no_workflow_profile_override(argv):
    """A workflow profile (profiles/default/) silently overrides a --profile's resources key by
    key; refuse that combination instead of submitting GPU jobs with the wrong resources."""
    if "--profile" not in argv or "--workflow-profile" in argv:
        return
    for base in (Path.cwd(), Path(workflow.basedir)):
        if (base / "profiles" / "default" / "config.yaml").is_file():
            raise WorkflowError(
                f"{base / 'profiles/default'} would override the resources of --profile "
                f"{argv[argv.index('--profile') + 1]} (a workflow profile wins key by key). "
                "Remove or merge it, or add --workflow-profile none."
            )


check_no_workflow_profile_override(sys.argv)

STUDIES = list(RUNS)
PACKED = config["pack"]["max_models"] > 1
RUN_BY_ID = {(study, r.run_id): r for study, runs in RUNS.items() for r in runs}
PACK_OF = {(study, r.run_id): pack for study, packs in PACKS.items() for pack, members in packs.items() for r in members}
DATA = "results/data/cifar10.npz"
TABLES = ["runs.csv", "history.csv.gz", "spreads.csv", "beta.csv", "claims.csv", "claims.md", "paper_tables.md"]
REPORT_TABLES = ["spreads.csv", "claims.csv", "claims.md", "paper_tables.md", "runs.csv"]
ALL_TABLES = [f"results/tables/{name}" for name in TABLES] + ["results/config.resolved.yaml"]
ALL_TABLES += ["results/tables/linear_check.csv", "results/tables/clocks.csv"]  # workflow/rules/theory.smk
ALL_FIGURES = [f"figures/{fig}.{ext}" for fig in buildable_figures(STUDIES) for ext in ("pdf", "png")]


wildcard_constraints:
    study="|".join(STUDIES),
    run_id="[^/]+",
    pack="[^/]+",
    fig="|".join(FIGURES),


def run_files(study):
    """Metrics files of every run of one study."""
    return [f"results/runs/{study}/{r.run_id}.json" for r in RUNS[study]]


def trainer_runs(runs):
    """Runs as the dicts the trainer takes."""
    return [{"run_id": r.run_id, "spec": r.spec} for r in runs]


def pack_members(wildcards):
    """The runs of one pack, as dicts the trainer takes."""
    return trainer_runs(PACKS[wildcards.study][wildcards.pack])


def single_run(wildcards):
    """The one run of an unpacked training job, as the trainer takes it."""
    key = (wildcards.study, wildcards.run_id)
    if key not in RUN_BY_ID:
        raise WorkflowError(f"run {wildcards.run_id} is not part of study {wildcards.study} in this config")
    return trainer_runs([RUN_BY_ID[key]])


def pack_of_run(wildcards):
    """The pack file that holds one run's metrics."""
    key = (wildcards.study, wildcards.run_id)
    if key not in PACK_OF:
        raise WorkflowError(f"run {wildcards.run_id} is not part of study {wildcards.study} in this config")
    return f"results/packs/{wildcards.study}/{PACK_OF[key]}.json"


def study_tables(studies):
    """Per-study run and history tables."""
    return [f"results/tables/studies/{s}.{kind}" for s in studies for kind in ("runs.csv", "history.csv.gz")]


def figure_inputs(wildcards):
    """Per-study tables a figure reads; a clear error when the config lacks a study it needs."""
    studies = figure_studies(wildcards.fig, STUDIES)
    if studies is None:
        raise WorkflowError(f"{wildcards.fig} needs studies {list(FIGURES[wildcards.fig][0])}; this config has {STUDIES}")
    return study_tables(studies)


TRAIN_PARAMS = dict(
    device=config["compute"]["device"],
    precision=config["compute"]["precision"],
    compile=config["compute"]["compile"],
    engine=config["pack"]["engine"],
    max_images=config["pack"]["max_images"],
    checkpoint_every=config["checkpoint"]["every_epochs"],
    keep_checkpoints=config["checkpoint"]["keep"],
)


def train_resources(specs_of):
    """runtime (minutes) and mem_mb of a training job, estimated from the size of its runs."""
    ips = config["compute"]["images_per_second"]
    return dict(
        gpu=0,
        runtime=lambda w: pack_runtime_minutes(specs_of(w), ips, config["compute"].get("max_runtime_minutes")),
        mem_mb=lambda w: pack_mem_mb(specs_of(w)),
    )
