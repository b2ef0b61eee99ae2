# Shared helpers: expand the config's studies into runs and packs (all logic lives in initmem).
import atexit
import json
import os
import shlex
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError

LIBRARY_DIR = str(Path(workflow.basedir) / "workflow")
sys.path.insert(0, LIBRARY_DIR)
from initmem.pipeline.invocation import shell_python  # noqa: E402

# The interpreter of the shell rules: Snakemake's own, or with --sdm conda the one of the rule's
# envs/*.yaml environment, which Snakemake activates before the command (first `python` on PATH).
PYTHON = shell_python(workflow.deployment_settings.deployment_method, sys.executable)

from initmem.pipeline.grid import check_two_sigmas, expand_studies, final_test_size  # noqa: E402
from initmem.cluster.compilecache import compile_cache_environment  # noqa: E402
from initmem.costs.timelimit import SUBMITTED_RULE, capped_compute, partition_time_limit, submitted_resources  # noqa: E402
from initmem.pipeline.guards import (INVOCATION_ENV, InvocationError, check_data_archive, invocation, read_only_folder,  # noqa: E402
                                    snakemake_command)
from initmem.pipeline.estimate import planned_estimate, profile_jobs  # noqa: E402
from initmem.pipeline.identity import (ANALYSIS_SCRIPTS, analysis_version, code_version_before_moves, data_code_version, data_folder,  # noqa: E402
                                       data_identity, final_test_file, run_code_version, run_key, source_of)
from initmem.pipeline.interrupted import logs_since  # noqa: E402
from initmem.pipeline.stops import lost_summary, what_jobs_lost  # noqa: E402
from initmem.pipeline.invocation import (diverged_summary, finished_outputs, prepare_invocation, read_bytes,  # noqa: E402
                                         record_provenance, restore_file, write_failures, wrote_into)
from initmem.pipeline.legacy import FORMER_DATA_CODES  # noqa: E402
from initmem.cluster.packlock import live_packs, live_packs_line  # noqa: E402
from initmem.pipeline.planning import (DATA_ENV, FINAL_TEST_ENV, plan_path, plan_studies, read_plan, trained_plan_files,  # noqa: E402
                                      write_plan)
from initmem.pipeline.runfiles import run_file_stems  # noqa: E402
from initmem.spec import ConfigError  # noqa: E402
from initmem.pipeline.targets import (FIGURES, buildable_figures, figure_studies, job_mem_mb, job_runtime_minutes, needs_analysis,  # noqa: E402
                                     unused_studies_warning)


def _resource_args(resources) -> list:
    """Snakemake's parsed resources (``Resources``, or None) as ``name=value`` strings."""
    return list(getattr(resources, "args", None) or [])


# A train job's resources as submitted (its set-resources, where the profile states the cluster's
# keys, over the default-resources): what the account check and the time-limit cap read.
TRAIN_RESOURCES = submitted_resources(
    _resource_args(workflow.resource_settings.overwrite_resources.get(SUBMITTED_RULE)),
    _resource_args(workflow.resource_settings.default_resources))


def _command_line(argv):
    """This command line as Snakemake's own parser reads it (None should it not parse here)."""
    from snakemake.cli import get_argument_parser

    try:
        return get_argument_parser().parse_args(argv[1:])
    except (SystemExit, Exception):  # Snakemake accepted it; we only lose the targets in repair commands
        return None


# Snakemake's options that build nothing (their argparse names): the guards on what a build would compute
# (one sigma_w, say) never stop them, so `--unlock` works on any checkout. Kept here, with the command
# line's parsing, so that no analysis output's code identity holds it.
BUILDS_NOTHING = ("unlock", "cleanup_metadata", "cleanup_shadow", "list_rules", "list_target_rules", "lint", "list_changes",
                  "list_input_changes", "list_params_changes", "list_untracked", "list_conda_envs", "conda_cleanup_envs",
                  "print_compilation", "delete_all_output", "delete_temp_output", "archive", "container_cleanup_images")
# Options that run no job: a dry run (-n), the listings and graphs, and every option that builds nothing.
RUNS_NO_JOB = ("dryrun", "summary", "detailed_summary", "dag", "rulegraph", "filegraph") + BUILDS_NOTHING

# The command line as Snakemake reads it (the main process's; a job keeps the command it was sent with).
_ARGS = _command_line(sys.argv) if workflow.is_main_process else None
# What refuses to submit jobs (the Slurm profile's placeholder account) only warns in a command that
# submits none: `snakemake -n --profile slurm` works on any machine (initmem.pipeline.invocation).
SUBMITS_NOTHING = any(getattr(_ARGS, name, None) for name in RUNS_NO_JOB)

INVOCATION_STARTED = time.time()  # training logs written since belong to this invocation
PACKS_DIR = "results/packs"
PLANS_DIR = "results/plans"
RUNS_DIR = "results/runs"
# Where this config's tables, figures and their logs go (docs/outputs.md): with `name: X`, under
# results/X/ and figures/X/, apart from every other config's; without (the default), where they
# always were. Training (data, plans, packs, run files) is shared: a run's identity key decides it.
OUTPUT_NAME = config.get("name")
TABLES_DIR = f"results/{OUTPUT_NAME}/tables" if OUTPUT_NAME else "results/tables"
FIGURES_DIR = f"figures/{OUTPUT_NAME}" if OUTPUT_NAME else "figures"
LOGS_DIR = f"results/logs/{OUTPUT_NAME}" if OUTPUT_NAME else "results/logs"
RESOLVED_CONFIG = f"results/{OUTPUT_NAME}/config.resolved.yaml" if OUTPUT_NAME else "results/config.resolved.yaml"
# The record as this invocation found it: a failed invocation that wrote no table or figure puts it back.
PREVIOUS_RESOLVED = read_bytes(RESOLVED_CONFIG) if workflow.is_main_process else None

# What a run's result depends on (docs/reruns.md): its spec, the prepared data's content, the
# trainer's code, the precision. Bookkeeping settings never go through params.
# One prepared file per data identity (and data code), written once and never replaced: another
# config's prepare_data never removes it, and prepare_data has no reason to run but a missing file.
# That is what makes one invocation plan everything: a job that must rerun for a reason of its own
# hides everything downstream of it from Snakemake's first needrun pass, and the training jobs'
# ancient() data input would then keep them hidden (docs/reruns.md, "One invocation").
try:
    if not config["data"].get("verify_md5", True):
        check_data_archive(config["data"], None)  # read for its md5 right below
    DATA_ID = data_identity(config["data"])
    DATA_SOURCE = config["data"]["source"]
    DATA_CODE = data_code_version(DATA_SOURCE)

    def _legacy_folder(ident: dict, code: str) -> str:
        """An older checkout recorded the hash of its data code: a former version that prepares the same
        data as this one is this one. Called only when there is an old file to move (not on every parse)."""
        same = code in (DATA_CODE, code_version_before_moves(("engine/data.py",)), *FORMER_DATA_CODES)
        return data_folder(ident, data_code_version(source_of(ident)) if same else code)

    # Every parse-time side effect in one call (checks of the command line, the one-time legacy data
    # move, notes on another config's outputs), each a line at `snakemake -n` already; it writes no
    # provenance: that is the onsuccess/onerror handlers' (Snakefile), once the jobs have run.
    _INVOCATION = prepare_invocation(
        sys.argv, [Path.cwd(), Path(workflow.basedir)], TRAIN_RESOURCES,
        config, lambda: Path(f"results/data/{data_folder(DATA_ID, DATA_CODE)}/cifar10.npz"), _legacy_folder,
        RESOLVED_CONFIG, root=Path.cwd(), submits_nothing=SUBMITS_NOTHING) if workflow.is_main_process else None
    DATA = f"results/data/{data_folder(DATA_ID, DATA_CODE)}/cifar10.npz"
except InvocationError as exc:
    raise WorkflowError(str(exc))


# The partition's time limit (slurm/config.yaml: train's partition_time_limit) caps each job's time request,
# its pack's size and its attempts as compute.max_runtime_minutes does (initmem.costs.timelimit).
try:
    config["compute"] = capped_compute(config["compute"], partition_time_limit(TRAIN_RESOURCES))
    RUNS = expand_studies(config)
    PLANNED = plan_studies(config, RUNS, PLANS_DIR, PACKS_DIR, DATA_ID)
except (ConfigError, ValueError) as exc:
    raise WorkflowError(f"invalid config: {exc}")
# The runs' final evaluation (final_test) on more of the test split's first images than the prepared data
# holds: one more prepared file, FINAL_DATA (rule prepare_final_test), an input only of the packs that need
# it (final_test_input), named to their jobs through the environment (initmem.pipeline.jobs.FINAL_TEST_ENV).
FINAL_TEST = final_test_size(RUNS, config["data"])
FINAL_DATA = final_test_file(DATA_ID, DATA_CODE, FINAL_TEST) if FINAL_TEST else None
PACKS = {study: packs for study, (packs, _) in PLANNED.items()}
PACK_OF = {(study, run_id): pack for study, (_, pack_of) in PLANNED.items() for run_id, pack in pack_of.items()}
# Each run's metrics file name: its run id, or <run_id>~<tag> where another config's run of the same id
# (another spec or other data) holds the plain file, so both records stay (initmem.pipeline.runfiles).
RUN_FILE = {(study, run_id): stem for study, (_, pack_of) in PLANNED.items()
            for run_id, stem in run_file_stems(RUNS[study], pack_of, trained_plan_files(PLANS_DIR, PACKS_DIR, study), DATA_ID,
                                               f"{RUNS_DIR}/{study}").items()}
RUN_OF_FILE = {(study, stem): run_id for (study, run_id), stem in RUN_FILE.items()}

PRECISION = config["compute"]["precision"]
# The version of the code behind each kind of analysis output (what its scripts import: initmem.pipeline.identity.ANALYSIS_SCRIPTS)
ANALYSIS = {output: analysis_version(output) for output in ANALYSIS_SCRIPTS}
DATA_CONFIG_JSON = json.dumps(config["data"])
TRAIN_SETTINGS_JSON = json.dumps(dict(
    device=config["compute"]["device"],
    precision=PRECISION,
    compile=config["compute"]["compile"],
    memory_format=config["compute"].get("memory_format", "contiguous"),
    engine=config["pack"]["engine"],
    max_images=config["pack"]["max_images"],
    checkpoint_every=config["checkpoint"]["every_epochs"],
    checkpoint_minutes=config["checkpoint"].get("every_minutes", 0),
    keep_checkpoints=config["checkpoint"]["keep"],
    attempts=config["compute"].get("attempts", 1),
))


# What the jobs' shell commands need but must never be a rerun trigger (the project's paths, the
# bookkeeping settings) reaches them through the environment: Snakemake neither compares it nor
# takes it for an undeclared input. A job on a cluster node re-parses this file and sets it there.
os.environ.update(INITMEM_PYTHON=PYTHON, INITMEM_LIBRARY=LIBRARY_DIR, INITMEM_TRAIN_SETTINGS=TRAIN_SETTINGS_JSON,
                  INITMEM_DATA_CONFIG=DATA_CONFIG_JSON, **{DATA_ENV: json.dumps(DATA_ID)},
                  **({FINAL_TEST_ENV: FINAL_DATA} if FINAL_DATA else {}))
# The shared compile cache's root (results/compile_cache/ or $INITMEM_COMPILE_CACHE), absolute: a job compiles
# what no earlier job of the same shapes compiled, one job per shape writing it; each job chooses its
# Inductor and Triton folders itself (initmem.cluster.compilecache).
os.environ.update(compile_cache_environment(os.environ, Path.cwd()))



# The command that started this invocation, for repair commands that work as printed
# (initmem.pipeline.guards.snakemake_command); a job on a cluster node keeps the one it was sent with.
if workflow.is_main_process:
    os.environ[INVOCATION_ENV] = json.dumps(invocation(sys.argv, list(workflow.overwrite_configfiles or []),
                                                       list(getattr(_ARGS, "targets", None) or []),
                                                       workflow.resource_settings.cores, Path.cwd()))
    # A read-only results or figures folder: one line saying so (Snakemake's own "Write-protected
    # output files" names no cause); an invocation that runs no job (a dry run, --summary, --dag) only notes it.
    if (_read_only := read_only_folder(["results", TABLES_DIR, FIGURES_DIR])):
        if not any(getattr(_ARGS, k, None) for k in ("dryrun", "summary", "detailed_summary", "dag", "rulegraph", "filegraph", "lint")):
            raise WorkflowError(_read_only)
        print(f"NOTE: {_read_only}", file=sys.stderr)
    # Spreads and |beta| compare runs across sigma_w: an invocation that computes them (not `runs`)
    # refuses a configuration with one value, at `snakemake -n` already.
    if not any(getattr(_ARGS, name, None) for name in BUILDS_NOTHING) and needs_analysis(list(getattr(_ARGS, "targets", None) or []), TABLES_DIR, FIGURES_DIR):
        try:
            check_two_sigmas(RUNS)
        except ConfigError as exc:
            raise WorkflowError(f"invalid config: {exc}")


# A restarted main Snakemake (docs/slurm.md): packs whose lease names a live trainer (a Slurm job still
# queued or running, by one squeue call for all of them, or a live pid on this host) are never
# submitted again. Before any job starts (onstart, Snakefile) an invocation that would train one
# refuses in one line naming them and their holders, with the command that leaves them out; a dry
# run notes them at its end. One glob where nothing trains (initmem.cluster.packlock.live_packs).
def _live_packs_to_train() -> list:
    """The packs this invocation would train that live jobs still train."""
    dag = workflow.dag
    live = live_packs("results/checkpoints", PLANS_DIR) if dag is not None else []
    if not live:
        return []
    wanted = {(job.wildcards.study, job.wildcards.pack) for job in dag.needrun_jobs(exclude_finished=False) if job.rule.name == "train"}
    return [pack for pack in live if (pack.study, pack.pack) in wanted]


def _before_the_jobs() -> None:
    """Refuse, before any job starts, to train a pack that a live job still trains."""
    if (live := _live_packs_to_train()):
        files = " ".join(shlex.quote(f"{PACKS_DIR}/{pack.study}/{pack.pack}.json") for pack in live)
        print(live_packs_line(live, f"{snakemake_command(keep_targets=True)} --omit-from {files}"), file=sys.stderr, flush=True)
        sys.exit(1)


def _note_live_packs() -> None:
    if (live := _live_packs_to_train()):
        print(live_packs_line(live, None), file=sys.stderr, flush=True)


if workflow.is_main_process and getattr(_ARGS, "dryrun", False):
    atexit.register(_note_live_packs)


def _print_planned_estimate():
    """The GPU-hours and checkpoint disk of the training jobs this dry run planned (at exit: after
    Snakemake's own summary), from the same code as `python -m initmem estimate`."""
    dag = workflow.dag
    if dag is None:
        return  # the DAG was never built: Snakemake said why
    jobs = [job for job in dag.needrun_jobs(exclude_finished=False) if job.rule.name == "train"]
    packs = [[m["spec"] for m in pack_members(job.wildcards.study, job.wildcards.pack).values()] for job in jobs]
    whole = [[spec for _, spec in pack.members] for packs_of in PACKS.values() for pack in packs_of.values()]
    profile = Path(workflow.basedir) / "slurm/config.yaml"
    if (text := planned_estimate(packs, config["compute"], profile_jobs(profile) if profile.is_file() else None,
                                 [job.wildcards.study for job in jobs], whole)):
        print(text, file=sys.stderr)


# A dry run of a config that trains on GPUs ends with what its training would cost.
if workflow.is_main_process and getattr(_ARGS, "dryrun", False) and config["compute"]["device"] == "cuda":
    atexit.register(_print_planned_estimate)


def key_of(spec):
    """A run's identity key under this config: its spec, the data, the code it uses, the precision."""
    return run_key(spec, DATA_ID, run_code_version(spec, DATA_SOURCE), PRECISION)


STUDIES = list(RUNS)
RUN_BY_ID = {(study, r.run_id): r for study, runs in RUNS.items() for r in runs}
if (_warning := unused_studies_warning(STUDIES)):
    print(_warning, file=sys.stderr)
TABLES = ["runs.csv", "history.csv.gz", "spreads.csv", "beta.csv", "claims.csv", "claims.md", "paper_tables.md"]
REPORT_TABLES = ["spreads.csv", "claims.csv", "claims.md", "paper_tables.md", "runs.csv"]
ALL_TABLES = [f"{TABLES_DIR}/{name}" for name in TABLES] + [RESOLVED_CONFIG]
ALL_TABLES += [f"{TABLES_DIR}/linear_check.csv", f"{TABLES_DIR}/clocks.csv"]  # workflow/rules/theory.smk
ALL_FIGURES = [f"{FIGURES_DIR}/{fig}.{ext}" for fig in buildable_figures(STUDIES) for ext in ("pdf", "png")]


wildcard_constraints:
    study="|".join(STUDIES),
    run_id="[^/]+",
    pack="[^/]+",
    fig="|".join(FIGURES),


def run_files(study):
    """Metrics files of every run of one study."""
    return [f"{RUNS_DIR}/{study}/{RUN_FILE[(study, r.run_id)]}.json" for r in RUNS[study]]


def run_of(wildcards):
    """The configured run id of a metrics file (rule run_metrics' wildcard ``run_id`` is the file's name)."""
    key = (wildcards.study, wildcards.run_id)
    if key in RUN_OF_FILE:
        return RUN_OF_FILE[key]
    if key in RUN_FILE:  # asked for the plain file of a run whose record here is a tagged one
        raise WorkflowError(f"{RUNS_DIR}/{key[0]}/{key[1]}.json holds another config's run {key[1]}; this config's is "
                            f"{RUNS_DIR}/{key[0]}/{RUN_FILE[key]}.json")
    raise WorkflowError(f"run {wildcards.run_id} is not part of study {wildcards.study} in this config")


# Each pack's members with their keys, computed once per invocation: its plan, its resources and
# each of its run files ask for them (tens of thousands of times at paper scale).
_MEMBERS = {}


def pack_members(study, pack_name):
    """A pack's members with their identity keys now, by run id. A pack this parse did not plan (a
    cluster node re-reading the workflow while its own pack trains) is read from its plan file."""
    if (study, pack_name) not in _MEMBERS:
        pack = PACKS.get(study, {}).get(pack_name)
        if pack is not None:
            members = pack.members
        else:
            path = plan_path(PLANS_DIR, study, pack_name)
            if not path.is_file():
                raise WorkflowError(f"pack {pack_name} is not part of study {study} in this config")
            members = [(m["run_id"], m["spec"]) for m in read_plan(path)]
        _MEMBERS[(study, pack_name)] = {run_id: {"run_id": run_id, "spec": spec, "key": key_of(spec)} for run_id, spec in members}
    return _MEMBERS[(study, pack_name)]


def plan_members(wildcards):
    """A pack's members with their identity keys now (:func:`pack_members`)."""
    return list(pack_members(wildcards.study, wildcards.pack).values())


def final_test_input(wildcards):
    """The final test images (FINAL_DATA) where a pack's runs evaluate on more than the prepared data's
    test images; nothing otherwise, so every other pack's inputs are what they were."""
    need = max(int(m["spec"].get("final_test", 0)) for m in plan_members(wildcards))
    return [ancient(FINAL_DATA)] if FINAL_DATA and need > int(config["data"]["n_test"]) else []


def pack_of_run(wildcards):
    """The pack file that holds one run's metrics."""
    return f"{PACKS_DIR}/{wildcards.study}/{PACK_OF[(wildcards.study, run_of(wildcards))]}.json"


def plan_of_run(wildcards):
    """The plan of the pack that holds one run."""
    return f"{PLANS_DIR}/{wildcards.study}/{PACK_OF[(wildcards.study, run_of(wildcards))]}.json"


def run_key_of(wildcards):
    """The identity key of one configured run."""
    run_id = run_of(wildcards)
    members = pack_members(wildcards.study, PACK_OF[(wildcards.study, run_id)])
    if run_id in members:
        return members[run_id]["key"]
    return key_of(RUN_BY_ID[(wildcards.study, run_id)].spec)  # reused from a pack that trained its spec under another id


def study_tables(studies):
    """Per-study run and history tables."""
    return [f"{TABLES_DIR}/studies/{s}.{kind}" for s in studies for kind in ("runs.csv", "history.csv.gz")]


def figure_inputs(wildcards):
    """Per-study tables a figure reads; a clear error when the config lacks a study it needs."""
    studies = figure_studies(wildcards.fig, STUDIES)
    if studies is None:
        raise WorkflowError(f"{wildcards.fig} needs studies {list(FIGURES[wildcards.fig][0])}; this config has {STUDIES}")
    return study_tables(studies)


def train_resources():
    """A training job's resources: one GPU unless the config trains on the CPU, and the runtime
    (minutes) and host memory (mem_mb) that initmem.pipeline.targets estimates from its pack (with
    compute.compile on, its compile minutes and compile workers' memory: initmem.costs.compilecost)."""
    compute = config["compute"]

    def specs(w):
        return [m["spec"] for m in plan_members(w)]

    return dict(
        gpu=0 if compute["device"] == "cpu" else 1,
        runtime=lambda w: job_runtime_minutes(specs(w), compute),
        mem_mb=lambda w: job_mem_mb(specs(w), compute),
    )


# A table left empty (a full disk, an interrupted copy) looks finished to Snakemake: say so, with the repair.
if workflow.is_main_process:
    _empty = [f for f in ALL_TABLES + study_tables(STUDIES) if os.path.isfile(f) and os.path.getsize(f) == 0]
    if _empty:
        raise WorkflowError(f"{', '.join(_empty)}: empty (damaged); make it again: rm {' '.join(_empty)} && "
                            f"{snakemake_command(*_empty, keep_targets=True)}")


# Rules whose outputs are the same whatever the config (workflow/rules/theory.smk).
SAME_FOR_EVERY_CONFIG = ("linear_check",)


# Provenance: which config wrote this folder's tables and figures (docs/outputs.md). Snakemake runs
# these handlers only in an invocation that took the lock and ran jobs: never in a dry run, one
# refused because another Snakemake holds the lock, or one with nothing to do.
def _after_the_jobs(succeeded: bool) -> None:
    """Record this config as the one that wrote this folder's tables and figures (a failed invocation
    only if it wrote some; otherwise it puts back the record it found: its resolved_config job may
    have run), and name the runs of this invocation that diverged. After Ctrl-C (or SIGTERM to the
    trainers) the invocation ends with the stopped training jobs' line instead of Snakemake's
    generic error, when they are all that failed."""
    outputs = finished_outputs(workflow.dag.finished_jobs)
    # what only this config makes: not the record itself, nor the theory's outputs that every config shares
    own = finished_outputs(job for job in workflow.dag.finished_jobs if job.rule.name not in SAME_FOR_EVERY_CONFIG)
    files = json.loads(os.environ[INVOCATION_ENV])["configfiles"]
    recorded = succeeded or wrote_into([o for o in own if o != RESOLVED_CONFIG], (TABLES_DIR, FIGURES_DIR))
    if recorded:
        record_provenance(RESOLVED_CONFIG, config, files)
    elif RESOLVED_CONFIG in outputs:
        restore_file(RESOLVED_CONFIG, PREVIOUS_RESOLVED)
    failed_logs = [str(job.log[0]) for job in getattr(workflow.scheduler, "failed", ()) if job.log]
    for line in write_failures(failed_logs, recorded, RESOLVED_CONFIG):  # a full disk, a read-only folder: said last
        print(line, file=sys.stderr)
    new_runs = [o for o in outputs if o.startswith("results/runs/")]
    if (line := diverged_summary(new_runs)):
        print(line, file=sys.stderr)
    # each stopped training job with what it lost (one whose pack was kept before it failed: nothing)
    stopped = {} if succeeded else what_jobs_lost(logs_since("results/logs/train", INVOCATION_STARTED), failed_logs)
    if (line := lost_summary(stopped)):
        print(line, file=sys.stderr, flush=True)
        if set(failed_logs) <= set(stopped):  # nothing else failed: this line is the invocation's last
            sys.exit(1)
