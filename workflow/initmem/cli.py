"""Entry points: what the Snakemake scripts call, and ``python -m initmem`` for use without Snakemake.

    python -m initmem prepare --source synthetic --n-train 512 --n-val 256 --n-test 256 data.npz
    python -m initmem train data.npz runs.json OUT_DIR     # runs.json: [{"run_id": ..., "spec": {...}}, ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

PREEMPTED_EXIT = 75  # EX_TEMPFAIL: stopped by SIGTERM after saving a checkpoint; rerun to resume


class _Tee:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
            s.flush()
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


@contextlib.contextmanager
def log_to(path: str | Path) -> Iterator[None]:
    """Copy stdout and stderr into ``path`` (progress stays visible on the console too)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(old_out, fh), _Tee(old_err, fh)
        try:
            yield
        except Exception as exc:  # the job's error belongs in its log too
            print(f"ERROR: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            raise
        finally:
            sys.stdout, sys.stderr = old_out, old_err


def prepare_data(data_cfg: dict, out: str | Path) -> None:
    """Load the configured CIFAR-10 source and write the prepared split file."""
    from initmem.data import build_splits, save_prepared

    cfg = dict(data_cfg)
    if cfg["source"] == "torchvision" and cfg.get("archive"):
        print(f"data.archive is set: reading CIFAR-10 from {cfg['archive']} instead of downloading", file=sys.stderr)
        cfg["source"] = "archive"
    start = time.perf_counter()
    splits = build_splits(cfg, download_root=Path(out).parent / "download")
    save_prepared(splits, out)
    print(f"prepared {out}: train {len(splits.x_train)}, val {len(splits.x_val)}, test {len(splits.x_test)} "
          f"from {splits.meta['source']} in {time.perf_counter() - start:.1f}s", file=sys.stderr)


def train_pack_file(runs: list[dict], data: str | Path, out: str | Path | None, *, run_out: str | Path | None = None,
                    device: str = "auto", threads: int = 1, engine: str = "vmap", precision: str = "float32",
                    compile: bool = False, max_images: int | None = None, checkpoint_dir: str | Path | None = None,
                    checkpoint_every: int = 0, keep_checkpoints: bool = False) -> None:
    """Train a pack and write its pack file (or, for a single run, ``run_out``) atomically;
    checkpoints are removed once the file is written."""
    import torch

    from initmem.data import load_prepared
    from initmem.records import write_pack
    from initmem.train import Preempted, finish_pack, install_sigterm_handler, train_pack

    torch.set_num_threads(int(threads))
    install_sigterm_handler()
    ckpt_dir = Path(checkpoint_dir) if checkpoint_dir else None
    splits = load_prepared(data)
    print(f"training {len(runs)} run(s): {', '.join(r['run_id'] for r in runs)}", file=sys.stderr, flush=True)
    try:
        records = train_pack(runs, splits, device=device, engine=engine, precision=precision, compile=compile,
                             max_images=max_images, checkpoint_dir=ckpt_dir, checkpoint_every=int(checkpoint_every))
    except Preempted as exc:
        print(f"{exc}; exiting with status {PREEMPTED_EXIT}, a restart resumes from the checkpoint", file=sys.stderr, flush=True)
        sys.exit(PREEMPTED_EXIT)
    if run_out is not None:
        from initmem.io import write_json

        write_json(run_out, records[0])
    else:
        write_pack(out, records)
    finish_pack(runs, ckpt_dir, keep_checkpoints)


def collect_study(files: list[str], study: str, runs_out: str | Path, history_out: str | Path) -> None:
    """One study's metrics files -> run table and history table (atomic CSV writes)."""
    from initmem.analysis import collect
    from initmem.io import atomic_path

    runs, history = collect(list(files), study)
    for df, path in ((runs, runs_out), (history, history_out)):
        with atomic_path(path) as tmp:
            df.to_csv(tmp, index=False, compression="gzip" if str(path).endswith(".gz") else None)
    print(f"{study}: {len(runs)} runs ({(runs['status'] != 'ok').sum()} diverged), {len(history)} epoch rows",
          file=sys.stderr)


def _read_tables(files: list[str]):
    import pandas as pd

    frames = [pd.read_csv(f) for f in files]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def write_tables(runs_files: list[str], history_files: list[str], outputs: dict[str, str]) -> None:
    """runs.csv, history.csv.gz, spreads.csv, beta.csv, claims.csv/.md, paper_tables.md."""
    from initmem.analysis import beta_table, spreads
    from initmem.claims import claims, claims_markdown
    from initmem.io import atomic_path
    from initmem.report import paper_tables

    runs, history = _read_tables(list(runs_files)), _read_tables(list(history_files))
    spread_table = spreads(runs)
    frames = {"runs": runs, "history": history, "spreads": spread_table, "beta": beta_table(history),
              "claims": claims(runs, history)}
    for key, df in frames.items():
        with atomic_path(outputs[key]) as tmp:
            df.to_csv(tmp, index=False, compression="gzip" if outputs[key].endswith(".gz") else None)
    texts = {"claims_md": claims_markdown(frames["claims"]), "paper_tables_md": paper_tables(runs, spread_table)}
    for key, text in texts.items():
        with atomic_path(outputs[key]) as tmp:
            tmp.write_text(text)
    print(f"tables: {len(runs)} runs, {len(frames['beta'])} beta rows", file=sys.stderr)


def figure_file(name: str, table_files: list[str], pdf: str | Path, png: str | Path) -> None:
    """Build one figure from per-study tables and write PDF + PNG."""
    from initmem.plots import make_figure, save_figure

    runs = _read_tables([f for f in table_files if f.endswith(".runs.csv")])
    history = _read_tables([f for f in table_files if f.endswith(".history.csv.gz")])
    save_figure(make_figure(name, runs, history), pdf, png)


def main(argv: list[str] | None = None) -> None:
    """``python -m initmem``: prepare data or train runs without Snakemake."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["clocks"]:  # its own parser: one-line errors that name the bad value
        from initmem.clocks import main as clocks_main

        sys.exit(clocks_main(argv[1:]))
    parser = argparse.ArgumentParser(prog="initmem", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="write a prepared split file")
    p.add_argument("out")
    p.add_argument("--source", default="torchvision", choices=["torchvision", "archive", "synthetic"])
    p.add_argument("--archive")
    p.add_argument("--no-verify-md5", action="store_true")
    p.add_argument("--n-train", type=int, default=40000)
    p.add_argument("--n-val", type=int, default=10000)
    p.add_argument("--n-test", type=int, default=10000)
    t = sub.add_parser("train", help="train runs (a pack) from a JSON list of {run_id, spec}")
    t.add_argument("data")
    t.add_argument("runs_json")
    t.add_argument("out_dir")
    t.add_argument("--device", default="auto")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--engine", default="vmap", choices=["vmap", "loop"], help="vmap: one vectorised model per pack")
    t.add_argument("--precision", default="float32", choices=["float32", "tf32", "bf16"])
    t.add_argument("--compile", action="store_true", help="torch.compile the forward/backward passes")
    t.add_argument("--max-images", type=int, help="models x images per evaluation chunk (memory bound)")
    g = sub.add_parser("estimate", help="GPU-hours per study of a config at a given throughput")
    g.add_argument("config")
    g.add_argument("--images-per-second", type=float, required=True,
                   help="training images/s of one job on your GPU (measure it: benchmarks/throughput.py --device cuda)")
    sub.add_parser("clocks", help="exact forgetting clocks of a recipe against the paper's points (clocks -h)")
    e = sub.add_parser("extract-run", help="write one run's metrics file from its pack file")
    e.add_argument("pack")
    e.add_argument("run_id")
    e.add_argument("out")
    e.add_argument("log", nargs="?")
    args = parser.parse_args(argv)
    if args.cmd == "estimate":
        import yaml

        from initmem.grid import expand_studies
        from initmem.targets import study_gpu_hours

        hours = study_gpu_hours(expand_studies(yaml.safe_load(Path(args.config).read_text())), args.images_per_second)
        print(f"| study | runs | GPU-hours at {args.images_per_second:g} images/s per job |\n|---|---:|---:|")
        for study, (n, h) in hours.items():
            print(f"| {study} | {n:,} | {h:,.0f} |")
        print(f"| all | {sum(n for n, _ in hours.values()):,} | {sum(h for _, h in hours.values()):,.0f} |")
    elif args.cmd == "extract-run":
        from initmem.records import extract_run

        extract_run(args.pack, args.run_id, args.out, args.log)
    elif args.cmd == "prepare":
        prepare_data({"source": args.source, "archive": args.archive, "verify_md5": not args.no_verify_md5,
                      "n_train": args.n_train, "n_val": args.n_val, "n_test": args.n_test}, args.out)
    else:
        from initmem.io import write_json

        runs = json.loads(Path(args.runs_json).read_text())
        pack = Path(args.out_dir) / "pack.json"
        train_pack_file(runs, args.data, pack, device=args.device, threads=args.threads, engine=args.engine,
                        precision=args.precision, compile=args.compile, max_images=args.max_images)
        for record in json.loads(pack.read_text())["runs"]:
            write_json(Path(args.out_dir) / f"{record['run_id']}.json", record)
