"""Entry points: ``.venv/bin/python -m initmem`` for use without Snakemake, and the training and data jobs' commands.

    .venv/bin/python -m initmem prepare --source synthetic --n-train 512 --n-val 256 --n-test 256 data.npz
    .venv/bin/python -m initmem train data.npz runs.json OUT_DIR     # runs.json: [{"run_id": ..., "spec": {...}}, ...]
    .venv/bin/python -m initmem estimate config/paper.yaml       # GPU-hours as a range, from the rate model (or --images-per-second R)
    .venv/bin/python -m initmem config config/paper.yaml config/archive.yaml   # the layered config, as the workflow reads it
    .venv/bin/python -m initmem clocks --optimizer sgd --lr 1e-2 --batch-size 16 --epochs 300
    .venv/bin/python -m initmem reanalyse evidence/jpeg-cifar10-small   # tables, figures, README verdict tables
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from initmem.spec import entry_names


def prepare_data(data_cfg: dict, out: str | Path) -> None:
    """Load the configured CIFAR-10 source and write the prepared split file."""
    from initmem.engine.data import build_splits, save_prepared

    cfg = dict(data_cfg)
    if cfg["source"] == "torchvision" and cfg.get("archive"):
        print(f"data.archive is set: reading CIFAR-10 from {cfg['archive']} instead of downloading", file=sys.stderr)
        cfg["source"] = "archive"
    start = time.perf_counter()
    # one download for every data identity: results/data/download beside the identities' folders
    splits = build_splits(cfg, download_root=Path(out).parent.parent / "download")
    save_prepared(splits, out)
    print(f"prepared {out}: train {len(splits.x_train)}, val {len(splits.x_val)}, test {len(splits.x_test)} "
          f"from {splits.meta['source']} in {time.perf_counter() - start:.1f}s", file=sys.stderr)


def prepare_final_test(data_cfg: dict, n: int, out: str | Path) -> None:
    """Write the first ``n`` images of the configured source's test split (the runs' ``final_test`` set,
    where it is larger than ``data.n_test``) as a prepared file with no training or validation images."""
    import dataclasses

    from initmem.engine.data import build_splits, save_prepared

    cfg = {**data_cfg, "n_test": int(n)}
    if cfg["source"] == "torchvision" and cfg.get("archive"):
        cfg["source"] = "archive"
    start = time.perf_counter()
    splits = build_splits(cfg, download_root=Path(out).parent.parent / "download")
    none = {k: getattr(splits, k)[:0] for k in ("x_train", "y_train", "x_val", "y_val")}
    save_prepared(dataclasses.replace(splits, **none), out)
    print(f"prepared {out}: the first {len(splits.x_test)} test images from {splits.meta['source']} in "
          f"{time.perf_counter() - start:.1f}s", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block): ``initmem CMD: error: ...``, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _user_errors() -> tuple[type[Exception], ...]:
    from initmem.engine.data import DataError
    from initmem.engine.device import DeviceError
    from initmem.io import WriteError
    from initmem.pipeline.records import RecordError
    from initmem.spec import ConfigError

    return (ConfigError, RecordError, DataError, DeviceError, WriteError, ValueError, FileNotFoundError)


def _reanalyse(argv: list[str]) -> int:
    """``python -m initmem reanalyse``: an analysis command (pandas, statsmodels, matplotlib), imported
    only when asked, so the training and data jobs' environments never need it."""
    from initmem.evidence import main as reanalyse_main

    return reanalyse_main(argv)


def main(argv: list[str] | None = None) -> None:
    """``python -m initmem``: prepare data or train runs without Snakemake."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["clocks"]:  # its own parser: one-line errors that name the bad value
        from initmem.theory.calculator import main as clocks_main

        sys.exit(clocks_main(argv[1:]))
    if argv[:1] == ["reanalyse"]:  # re-analyse a committed evidence folder (initmem/evidence.py)
        sys.exit(_reanalyse(argv[1:]))
    parser = _Parser(prog="initmem", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    p = sub.add_parser("prepare", help="write a prepared split file")
    p.add_argument("out")
    p.add_argument("--source", default="torchvision", choices=entry_names("source"),
                   help="a data source file of engine/datasources/ (default: torchvision)")
    p.add_argument("--archive")
    p.add_argument("--no-verify-md5", action="store_true")
    p.add_argument("--n-train", type=int, default=40000)
    p.add_argument("--n-val", type=int, default=10000)
    p.add_argument("--n-test", type=int, default=10000)
    p.add_argument("--config-json", help="the config's whole data section as JSON (what the workflow passes)")
    p.add_argument("--final-test", type=int, metavar="N",
                   help="write only the test split's first N images (the runs' final_test set)")
    p.add_argument("--log", help="also write the output to this log")
    t = sub.add_parser("train", help="train runs (a pack) from a JSON list of {run_id, spec}")
    t.add_argument("data")
    t.add_argument("runs_json")
    t.add_argument("out_dir")
    t.add_argument("--device", default="auto")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--engine", default="vmap", choices=["vmap", "loop"], help="vmap: one vectorised model per pack")
    t.add_argument("--precision", default="float32", choices=["float32", "tf32", "bf16"])
    t.add_argument("--compile", nargs="?", const=True, default=False, choices=[True, "step"],
                   help="torch.compile the forward/backward passes; '--compile step': the whole training step (CUDA graphs on a GPU)")
    t.add_argument("--max-images", type=int, help="models x images per evaluation chunk (memory bound)")
    tp = sub.add_parser("train-plan", help="train a pack plan into its pack file (what the workflow's train jobs run)")
    tp.add_argument("plan")
    tp.add_argument("data")
    tp.add_argument("out")
    tp.add_argument("--settings", required=True, help="JSON: the fields of initmem.engine.settings.TrainSettings (device, engine, precision, "
                                                          "compile, memory_format, max_images, checkpoint_every, checkpoint_minutes, "
                                                          "keep_checkpoints, attempts)")
    tp.add_argument("--threads", type=int, default=1)
    tp.add_argument("--checkpoint-dir")
    tp.add_argument("--log")
    g = sub.add_parser("estimate", help="GPU-hours per study of a config: low-central-high, with the rates' source")
    g.add_argument("config", nargs="+", help="config files, layered over the embedded default as the workflow does")
    g.add_argument("--images-per-second", type=float,
                   help="an assumed flat images/s of every job instead of the config's rates")
    g.add_argument("--rate-table", help="rates.csv of benchmarks/device_check.py instead of compute.rate_table")
    g.add_argument("--jobs", type=int, help="training jobs at once, for the checkpoint disk (default: slurm/config.yaml's jobs)")
    d = sub.add_parser("design", help="per headline claim of a config: P(decision) of its rule, the regime, the compute (initmem.planner.design)")
    d.add_argument("config", nargs="+", help="config files, layered over the embedded default as the workflow does")
    d.add_argument("--cheapest", action="store_true", help="also the least seeds x sigma_w grid giving each claim >= 80%%")
    d.add_argument("--write-config", metavar="FILE", help="with --cheapest (implied): write the config file that runs those "
                                                           "designs (to give after the config's own files)")
    d.add_argument("--outcome", metavar="EVIDENCE_DIR", help="instead: the plan beside that trained tier's claims table, planned "
                                                             "from the committed evidence without the tier itself")
    d.add_argument("--leave-out", metavar="FOLDER", action="append", default=[],
                   help="plan without this committed evidence folder (a name under evidence/; repeatable): the plan "
                        "as it was made before that tier was trained")
    c = sub.add_parser("config", help="print the configuration the workflow would use for these config files")
    c.add_argument("config", nargs="*", help="config files, layered over the embedded default (none: the default)")
    c.add_argument("--snakemake-args", nargs=argparse.REMAINDER, metavar="ARG",
                   help="instead: check that every --configfile among these Snakemake arguments is readable YAML, "
                        "naming the file, line and column of a mistake (Snakemake's own message names none); "
                        "silent when they are (make run does this first)")
    sub.add_parser("clocks", help="exact forgetting clocks of a recipe against the paper's points (clocks -h)")
    sub.add_parser("reanalyse", help="regenerate an evidence folder's tables, figures and README verdict tables (reanalyse -h)")
    e = sub.add_parser("extract-run", help="write one run's metrics file from its pack file")
    e.add_argument("pack")
    e.add_argument("run_id", help="the run id, or its metrics file's name (<run_id>~<tag>: initmem.pipeline.runfiles)")
    e.add_argument("out")
    e.add_argument("log", nargs="?")
    e.add_argument("--key", help="the run's identity key: the pack's record must carry it")
    args = parser.parse_args(argv)
    try:
        _run(args, parser)
    except _user_errors() as exc:  # bad input: one line naming the value, exit status 2
        parser.exit(2, f"initmem {args.cmd}: error: {exc}\n")


ARCHIVE_NAME = "cifar-10-python.tar.gz"


def offline_hint(config: dict, data_dir: Path) -> str | None:
    """One line before Snakemake starts where a config downloads CIFAR-10 through torchvision while the
    archive lies in ``data_dir`` (a first offline `make run`: torchvision's failure is the 413th line of
    455): which config files read it instead. None where nothing suggests it."""
    data = config.get("data", {})
    if data.get("source") != "torchvision" or data.get("archive") or not (data_dir / ARCHIVE_NAME).is_file():
        return None
    return (f"NOTE: {data_dir / ARCHIVE_NAME} is here, but this config downloads CIFAR-10 through torchvision; to read the "
            f'archive instead: make run ARGS="--configfile config/archive.yaml" (a re-packed copy, whose md5 is not the '
            f'official one: ARGS="--configfile config/archive.yaml config/jpeg-copy.yaml")')


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.cmd == "config":
        import yaml

        from initmem.pipeline.configfiles import load_config
        from initmem.pipeline.grid import expand_studies

        if args.snakemake_args is not None:
            from initmem.pipeline.configfiles import check_configfile_arg
            from initmem.pipeline.guards import configfile_args

            files = configfile_args(args.snakemake_args)
            for path in files:
                check_configfile_arg(path)
            if "--profile" not in args.snakemake_args and (hint := offline_hint(load_config(files), Path("data"))):
                print(hint, file=sys.stderr)
            return
        config = load_config(args.config)
        expand_studies(config)  # what the workflow checks when it parses: every run spec
        print(yaml.safe_dump(config, sort_keys=False), end="")
    elif args.cmd == "design":
        from initmem.pipeline.configfiles import load_config
        from initmem.pipeline.estimate import cluster_config
        from initmem.planner.design import EVIDENCE, measured, outcome, report

        config = cluster_config(load_config(args.config))  # priced as `estimate` prices it
        unknown = sorted(set(args.leave_out) - {p.name for p in EVIDENCE.iterdir() if p.is_dir()})
        if unknown:
            parser.error(f"--leave-out {', '.join(unknown)}: no such folder under evidence/")
        # an outcome is planned as its tier was: without the tier itself
        leave_out = set(args.leave_out) | ({Path(args.outcome).resolve().name} if args.outcome else set())
        sources = measured(leave_out=tuple(sorted(leave_out)))
        if args.outcome:
            print(outcome(config, Path(args.outcome), sources), end="")
        elif args.cheapest or args.write_config:
            _design_cheapest(args, config, sources)
        else:
            print(report(config, " ".join(args.config), False, sources), end="")
    elif args.cmd == "estimate":
        from initmem.pipeline.configfiles import load_config
        from initmem.pipeline.estimate import estimate_table

        if args.images_per_second is not None and not args.images_per_second > 0:
            raise ValueError(f"--images-per-second {args.images_per_second:g} must be > 0 (a measured training throughput)")
        config = load_config(args.config)
        if args.images_per_second is not None:
            config["compute"]["images_per_second"] = args.images_per_second
        elif args.rate_table is not None:
            config["compute"].update(images_per_second=None, rate_table=args.rate_table)
        from initmem.pipeline.estimate import cluster_config, profile_jobs

        config = cluster_config(config)  # the partition's time limit caps each job as on the cluster
        if args.jobs is not None and args.jobs < 1:
            raise ValueError(f"--jobs {args.jobs} must be >= 1 (training jobs running at once)")
        print(estimate_table(config, args.jobs if args.jobs is not None else profile_jobs()))
    elif args.cmd == "extract-run":
        from initmem.pipeline.records import extract_run
        from initmem.pipeline.runfiles import run_of_file

        # the workflow passes the file's name, which carries a configuration's tag where another config's run holds the plain one
        extract_run(args.pack, run_of_file(args.run_id), args.out, args.log, key=args.key)
    elif args.cmd == "prepare":
        cfg = json.loads(args.config_json) if args.config_json else {
            "source": args.source, "archive": args.archive, "verify_md5": not args.no_verify_md5,
            "n_train": args.n_train, "n_val": args.n_val, "n_test": args.n_test}
        from initmem.scriptjobs import log_to

        with log_to(args.log) if args.log else contextlib.nullcontext():
            if args.final_test:
                prepare_final_test(cfg, args.final_test, args.out)
            else:
                prepare_data(cfg, args.out)
    elif args.cmd == "train-plan":
        from initmem.cluster.compilecache import job_compile_environment

        os.environ.update(job_compile_environment(os.environ))  # before torch is imported: Triton reads it once
        from initmem.engine.settings import TrainSettings
        from initmem.pipeline.interrupted import stoppable_start
        from initmem.scriptjobs import log_to

        with log_to(args.log, attempts=True) if args.log else contextlib.nullcontext():
            settings = TrainSettings.from_json(args.settings)  # once: the job hands this one object down to the loop
            warming = _shared_compile_cache(args.plan, settings) if settings.compile else None  # before torch, too
            with stoppable_start():  # Ctrl-C during `import torch`: one line, no traceback
                from initmem.pipeline.jobs import train_plan_file
            with _warm_when_compiled(warming):
                train_plan_file(args.plan, args.data, args.out, settings, threads=args.threads, checkpoint_dir=args.checkpoint_dir)
    else:
        _train_runs_json(args)


def _shared_compile_cache(plan: str, settings):
    """Inductor's cache for this job, by its pack's shape (:func:`initmem.cluster.compilecache.inductor_cache`), set
    in the environment and said in one line; this job's claim where it warms the shape."""
    import dataclasses

    from initmem.cluster.compilecache import inductor_cache, shape_key
    from initmem.io import read_json
    from initmem.pipeline.planning import read_plan

    shape = shape_key(read_plan(plan), dataclasses.asdict(settings), data=read_json(plan).get("data"))
    variables, warming, line = inductor_cache(os.environ, shape, Path.cwd())
    os.environ.update(variables)
    print(line, file=sys.stderr, flush=True)
    return warming


def _warm_when_compiled(warming) -> contextlib.AbstractContextManager:
    """While the job trains, the shape's warmer marks it warm after its first epoch (nothing to do for another job)."""
    if warming is None:
        return contextlib.nullcontext()
    from initmem.engine.loop import EpochsFinished

    return warming.watching(lambda: EpochsFinished.count)


def _design_cheapest(args: argparse.Namespace, config: dict, sources) -> None:
    """``design --cheapest [--write-config FILE]``: the plan with the least compute per claim, each
    claim's search said on stderr as it starts; with FILE, the config that runs those designs, from the
    same search."""
    import time

    from initmem.planner.design import cheapest_designs, plans, report

    ps = plans(config, sources)
    print(f"design --cheapest: {len(ps)} claims to search (claims of one truth share their simulations)", file=sys.stderr, flush=True)
    start = time.process_time()
    found = cheapest_designs(config, ps, lambda line: print(f"{line} ({time.process_time() - start:.0f} CPU-s so far)",
                                                            file=sys.stderr, flush=True))
    print(report(config, " ".join(args.config), True, sources, ps, found), end="")
    if args.write_config:
        _write_cheapest_config(args, config, ps, found)


def _write_cheapest_config(args: argparse.Namespace, config: dict, ps, found) -> None:
    """``--write-config FILE``: the config that runs the cheapest designs (complete on its own), and on stderr
    the command that runs it with its compute (``estimate``'s ``all`` row), by claim family."""
    import yaml

    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.estimate import cluster_config, config_gpu_hours
    from initmem.pipeline.grid import expand_studies
    from initmem.planner.design import CPU_CORES, family_compute, run_command, whole_compute, written_config, written_name

    path, given = args.write_config, " ".join(args.config)
    command = run_command(config, path)
    Path(path).write_text(f"# the least compute per claim of `design --cheapest {given}`, its designs merged per configuration (the most "
                          f"seeds, the union of sigma_w); every other section as {given} sets it, so this file is complete on its own: "
                          f"{command}\n" + yaml.safe_dump(written_config(load_config(args.config), ps, found, written_name(path)), sort_keys=False))
    written = cluster_config(load_config([path]))
    runs = sum(len(r) for r in expand_studies(written).values())
    whole = whole_compute(config)
    if written["compute"]["device"] == "cpu":
        total, unit = whole_compute(written), f"minutes on {CPU_CORES} cores"
        amount = f"{total:,.1f} {unit}"
    else:
        lo, total, hi = config_gpu_hours(written)
        unit = "GPU-hours"
        amount = f"{total:,.1f} GPU-hours central ({lo:,.1f} low, {hi:,.1f} high; the `all` row of `initmem estimate {path}`)"
    print(f"wrote {path}: {runs:,} runs, {amount}, {total / whole:.1%} of {given}'s {whole:,.1f}; run it with: {command}", file=sys.stderr)
    for family, amount in family_compute(config, ps, found).items():
        print(f"  {family}: {amount:,.1f} {unit} (the configurations its claims read)", file=sys.stderr)


def _train_runs_json(args: argparse.Namespace) -> None:
    """``python -m initmem train``: a JSON list of complete, valid specs -> one metrics file each."""
    import torch

    from initmem.engine.data import load_prepared
    from initmem.engine.settings import TrainSettings
    from initmem.io import write_json
    from initmem.pipeline.jobs import train_pack
    from initmem.spec import validate_spec

    runs = json.loads(Path(args.runs_json).read_text())
    if not isinstance(runs, list) or not runs:
        raise ValueError(f"{args.runs_json}: expected a non-empty JSON list of {{run_id, spec}}")
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("run_id"), str) or not isinstance(run.get("spec"), dict):
            raise ValueError(f"{args.runs_json}[{i}]: expected {{\"run_id\": str, \"spec\": {{...}}}}, got {run!r:.80}")
        validate_spec(run["spec"], f"{args.runs_json}[{i}] ({run['run_id']})")
        missing = [k for k in ("n_train", "n_val", "n_test") if k not in run["spec"]]
        if missing:
            raise ValueError(f"{args.runs_json}[{i}] ({run['run_id']}): spec lacks {missing}")
    torch.set_num_threads(args.threads)
    settings = TrainSettings(device=args.device, engine=args.engine, precision=args.precision, compile=args.compile,
                             max_images=args.max_images)
    records = train_pack(runs, load_prepared(args.data), settings)
    for record in records:
        write_json(Path(args.out_dir) / f"{record['run_id']}.json", record)
