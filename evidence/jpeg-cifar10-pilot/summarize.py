"""The regime pilot's tables and figure from its trained runs (results/runs/<study>/, as run.sh leaves them).

usage: PYTHONPATH=workflow python evidence/jpeg-cifar10-pilot/summarize.py [--results results] [--selected]
Writes, next to this file: tables/steps_to_fit.csv (one row per run: steps to 99.5% train accuracy,
the selected predictor's accuracies), tables/history.csv.gz (every epoch of every run) and
figures/train_acc_vs_steps.{pdf,png} (train accuracy against optimizer steps, one panel per cell).
Train accuracy is Keras' running mean over an epoch's batches (the engine's ``train_acc``).
With ``--selected``: only tables/selected_fit.csv, the selected-fit cell (sizes/n256-r32-selected.yaml):
per run its selected predictor's own eval-mode training accuracy (``train_acc_eval`` at tau_best).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from initmem.io import atomic_path, read_json
from initmem.paper import INTERP_TRAIN_ACC

HERE = Path(__file__).resolve().parent
INTERP_ACC = INTERP_TRAIN_ACC / 100  # a fraction, as the history holds train_acc
# cell -> (study suffix, n_train, resolution): config/evidence-pilot.yaml is the n128-r16 cell
CELLS = {"n128-r16": ("", 128, 16), "n256-r16": ("_n256_r16", 256, 16), "n512-r16": ("_n512_r16", 512, 16),
         "n256-r32": ("_n256_r32", 256, 32)}
OPTIMIZERS = ("sgd", "adam")
SELECTED_STUDY = "sgd_selected"  # the selected-fit cell's study (sizes/n256-r32-selected.yaml)
SIGMAS = (0.1, 0.5, 1.2, 2.5)


def records(results: Path) -> list[tuple[str, dict]]:
    """(cell, run record) of every pilot run; an error naming the missing file if a run is absent."""
    out = []
    for cell, (suffix, _, _) in CELLS.items():
        for opt in OPTIMIZERS:
            for s in SIGMAS:
                path = results / "runs" / f"{opt}{suffix}" / f"{opt}{suffix}_sw{s:g}_s0.json"
                if not path.exists():
                    raise SystemExit(f"{path}: missing; train the pilot first (bash {HERE.relative_to(Path.cwd())}/run.sh)")
                out.append((cell, read_json(path)))
    return out


def history(recs: list[tuple[str, dict]]) -> pd.DataFrame:
    """Every epoch of every run, with the optimizer steps taken by its end."""
    rows = []
    for cell, r in recs:
        spec = r["spec"]
        per_epoch = math.ceil(spec["n_train"] / spec["batch_size"])
        h = pd.DataFrame({k: r["history"][k] for k in ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "test_acc")})
        rows.append(h.assign(cell=cell, resolution=CELLS[cell][2], n_train=spec["n_train"], optimizer=spec["optimizer"],
                             sigma_w=spec["sigma_w"], step=h["epoch"] * per_epoch))
    cols = ["cell", "resolution", "n_train", "optimizer", "sigma_w", "epoch", "step", "train_loss", "train_acc", "val_loss", "val_acc", "test_acc"]
    return pd.concat(rows, ignore_index=True)[cols]


def steps_to_fit(h: pd.DataFrame, recs: list[tuple[str, dict]]) -> pd.DataFrame:
    """One row per run: steps to the first epoch at >= 99.5% train accuracy (empty: never), the last
    epoch's train accuracy, the selected predictor (first epoch of least val loss) and the wall time."""
    wall = {(c, r["spec"]["optimizer"], r["spec"]["sigma_w"]): r["wall_seconds"] for c, r in recs}
    rows = []
    for (cell, opt, s), g in h.groupby(["cell", "optimizer", "sigma_w"], sort=False):
        fit = g[g["train_acc"] >= INTERP_ACC]
        best = g.loc[g["val_loss"].idxmin()]
        rows.append({"cell": cell, "resolution": int(g["resolution"].iat[0]), "n_train": int(g["n_train"].iat[0]),
                     "optimizer": opt, "sigma_w": s, "steps_run": int(g["step"].max()),
                     "steps_to_fit": int(fit["step"].iat[0]) if len(fit) else None,
                     "train_acc_last": float(g["train_acc"].iat[-1]), "train_acc_max": float(g["train_acc"].max()),
                     "step_best": int(best["step"]), "val_acc_best": float(best["val_acc"]), "test_acc_best": float(best["test_acc"]),
                     "test_acc_last": float(g["test_acc"].iat[-1]), "wall_seconds": round(wall[(cell, opt, s)], 1)})
    return pd.DataFrame(rows).astype({"steps_to_fit": "Int64"})


def selected_fit(results: Path) -> pd.DataFrame:
    """One row per run of the selected-fit cell, from the run's summary: tau_best (first epoch of least
    validation loss), tau_interp (the first epoch of 99.5% running train accuracy), the selected network's own eval-mode training accuracy and
    whether it fits, its validation and test accuracy, and the wall time."""
    paths = sorted((results / "runs" / SELECTED_STUDY).glob(f"{SELECTED_STUDY}_sw*_s*.json"))
    if not paths:
        raise SystemExit(f"{results / 'runs' / SELECTED_STUDY}: no runs; train the selected-fit cell first (its command: "
                         f"{HERE.relative_to(Path.cwd())}/sizes/n256-r32-selected.yaml)")
    rows = []
    for path in paths:
        r = read_json(path)
        spec, best = r["spec"], r["summary"]   # the engine's own selection (tau_best) and readings at it
        rows.append({"sigma_w": spec["sigma_w"], "seed": spec["seed"], "tau_best": best["tau_best"], "tau_interp_running": best["tau_interp"],
                     "train_acc_running_best": best["train_acc_best"], "train_acc_eval_best": best["train_acc_eval_best"],
                     "selected_fits": best["train_acc_eval_best"] >= INTERP_ACC, "val_acc_best": best["val_acc_best"],
                     "test_acc_best": best["test_acc_best"], "wall_seconds": round(r["wall_seconds"], 1)})
    return pd.DataFrame(rows).sort_values(["sigma_w", "seed"]).astype({"tau_interp_running": "Int64"})


def figure(h: pd.DataFrame, path: Path) -> None:
    """Train accuracy against steps: one panel per cell, a colour per sigma_w, SGD solid, Adam dashed."""
    fig, axes = plt.subplots(1, len(CELLS), figsize=(4 * len(CELLS), 3.4), sharey=True)
    colours = dict(zip(SIGMAS, plt.cm.viridis([0.0, 0.35, 0.65, 0.9]), strict=True))
    for ax, cell in zip(axes, CELLS, strict=True):
        for (opt, s), g in h[h["cell"] == cell].groupby(["optimizer", "sigma_w"]):
            ax.plot(g["step"], g["train_acc"], color=colours[s], ls="-" if opt == "sgd" else "--", lw=1,
                    label=f"{'SGD' if opt == 'sgd' else 'Adam'} $\\sigma_w$={s:g}")
        ax.axhline(INTERP_ACC, color="grey", lw=0.6, ls=":")
        _, n, res = CELLS[cell]
        ax.set(title=f"n_train {n}, {res}x{res}", xlabel="optimizer steps (b=16)", ylim=(0, 1.02))
    axes[0].set_ylabel("train accuracy (running, per epoch)")
    axes[-1].legend(fontsize=6, ncol=2, loc="lower right")
    fig.suptitle("Regime pilot: lr 1e-3, cosine over each run's steps; dotted: 99.5% (JPEG CIFAR-10 copy, not official)", fontsize=9)
    fig.tight_layout()
    for suffix in (".pdf", ".png"):
        with atomic_path(path.with_suffix(suffix)) as tmp:
            fig.savefig(tmp, format=suffix[1:], dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--selected", action="store_true", help="only the selected-fit cell's table (tables/selected_fit.csv)")
    args = ap.parse_args()
    (HERE / "tables").mkdir(exist_ok=True)
    if args.selected:
        table = selected_fit(args.results)
        with atomic_path(HERE / "tables" / "selected_fit.csv") as tmp:
            table.to_csv(tmp, index=False, float_format="%.10g")
        print(table.to_string(index=False))
        return
    recs = records(args.results)
    h = history(recs)
    (HERE / "figures").mkdir(exist_ok=True)
    table = steps_to_fit(h, recs)
    with atomic_path(HERE / "tables" / "steps_to_fit.csv") as tmp:
        table.to_csv(tmp, index=False, float_format="%.10g")
    with atomic_path(HERE / "tables" / "history.csv.gz") as tmp:
        h.to_csv(tmp, index=False, float_format="%.10g", compression={"method": "gzip", "mtime": 0})
    figure(h, HERE / "figures" / "train_acc_vs_steps")
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
