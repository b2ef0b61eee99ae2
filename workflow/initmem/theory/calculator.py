"""The clock calculator: a recipe's exact clocks placed among the paper's measured points
(``python -m initmem clocks``) and ``results/tables/clocks.csv``. The sums are :mod:`initmem.engine.clocks`'s,
the ones the trainer records.

Two conventions, never mixed in one comparison:

* **exact**: the sums under a recipe's own schedule (cosine or constant, K = E ceil(n_train / b) steps),
  what the trainer records (:func:`initmem.engine.clocks.run_clocks`). Every ladder, nearest point and distance
  compares exact with exact: each paper point's clock is recomputed for the schedule its runs used.
* **the paper's constant-lr arithmetic** (Sec. 4.2: "Ignoring cosine decay and using K ~ E n_train/b",
  :func:`initmem.engine.clocks.paper_constant_lr_clocks`): how the paper quotes its clocks. Printed beside the
  exact values and beside the paper's quoted numbers, never against an exact value.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from typing import Any

from initmem import paper
from initmem.engine.clocks import CLOCK_KEYS, paper_constant_lr_clocks, run_clocks
from initmem.spec import ADAPTIVE, OPTIMIZERS, SCHEDULES, resolve_momentum, resolve_weight_decay

# The paper's measured points: (recipe, spread in pp of test accuracy over sigma_w, the clock values the
# paper quotes (its constant-lr arithmetic), where). A recipe is the paper's defaults (SGD, lr 1e-3,
# cosine alpha 0.01, 300 epochs, n_train 40000, no L2) with the overrides given; its exact clocks are
# computed by run_clocks in paper_points().
PAPER_POINTS = tuple((p.recipe, p.text, p.clocks, p.section) for p in paper.POINTS)
RECIPE_DEFAULTS = dict(schedule="cosine", alpha=0.01, weight_decay=None, momentum=None, n_train=40000)
CLOCK_NAMES = {"T_sgd": "T_SGD", "T_l2": "T_L2", "T_wd": "T_wd", "T_adapt": "T_adapt"}
# A recipe farther than this from every paper point of its kind (|log10| of the clock ratio) is out of
# the paper's measured range: its spreads say nothing about it.
OUT_OF_RANGE_ORDERS = 1.0
MAX_N_TRAIN = 40000  # as config/schema.yaml: the CIFAR-10 training split less the validation images


def recipe(**overrides: Any) -> dict[str, Any]:
    """A clock recipe: the paper's defaults (SGD, lr 1e-3, b 128, 300 epochs, cosine alpha 0.01,
    n_train 40000, no L2, the optimizer's own decay and momentum) with ``overrides``."""
    return {"optimizer": "sgd", "lr": 1e-3, "batch_size": 128, "epochs": 300, "l2": 0.0, **RECIPE_DEFAULTS, **overrides}


def _number(spec: dict[str, Any], key: str) -> float:
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{key} = {value!r} must be a finite number")
    return value


def check_recipe(spec: dict[str, Any]) -> None:
    """Raise ValueError naming the first bad value of a clock recipe; the bounds are config/schema.yaml's
    (lr > 0; alpha and momentum in [0, 1]; l2, weight_decay >= 0; integer epochs, b >= 1;
    n_train in [1, 40000]) and a batch no larger than the training set."""
    for key, allowed in (("optimizer", OPTIMIZERS), ("schedule", SCHEDULES)):
        if spec[key] not in allowed:
            raise ValueError(f"unknown {key} {spec[key]!r}; choose one of {list(allowed)}")
    if not _number(spec, "lr") > 0:
        raise ValueError(f"lr = {spec['lr']!r} must be a positive number")
    for key, top in (("batch_size", None), ("epochs", None), ("n_train", MAX_N_TRAIN)):
        value = _number(spec, key)
        if int(value) != value or value < 1 or (top is not None and value > top):
            raise ValueError(f"{key} = {value!r} must be an integer >= 1" + (f" and <= {top}" if top else ""))
    if spec["batch_size"] > spec["n_train"]:
        raise ValueError(f"batch_size = {spec['batch_size']} must not exceed n_train = {spec['n_train']}")
    for key, top in (("alpha", 1.0), ("momentum", 1.0), ("l2", None), ("weight_decay", None)):
        if spec.get(key) is None and key in ("momentum", "weight_decay"):
            continue  # null: the optimizer's own
        if not _number(spec, key) >= 0 or (top is not None and spec[key] > top):
            raise ValueError(f"{key} = {spec[key]!r} must be a number in [0, {top:g}]" if top else f"{key} = {spec[key]!r} must be a number >= 0")


def recipe_kind(spec: dict[str, Any]) -> str:
    """The kind of recipe a ladder compares like with like: "adaptive" (Adam, AdamW, Muon: one clock,
    T_adapt, whatever their decay), else the SGD family named by its momentum and explicit regularizers:
    "sgd", "sgd+L2", "sgd+wd", "sgd_momentum+wd", ... (SGD-momentum at momentum 0 is "sgd")."""
    if spec["optimizer"] in ADAPTIVE:
        return "adaptive"
    kind = "sgd_momentum" if resolve_momentum(spec["optimizer"], spec.get("momentum")) > 0 else "sgd"
    kind += "+L2" if spec.get("l2") else ""
    return kind + ("+wd" if resolve_weight_decay(spec["optimizer"], spec.get("weight_decay")) else "")


def governing_clock(spec: dict[str, Any], clocks: dict[str, float] | None = None) -> str:
    """The clock the paper reads for a recipe.

    The paper's reading (Sec. 4.1-4.2): forgetting needs the accumulated regularization to reach order
    one, read on one scale for the implicit and the explicit clock (:data:`GOVERNING_RULE` quotes the
    paper's points; exact under their cosine schedules the two cutting recipes are at T_SGD 1.77 and T_L2 2.37).

    * Adaptive optimizers: T_adapt (first-order movement, K eta). Their decoupled decay (1e-4 for
      AdamW and Muon) is not what drives them: Adam without decay forgets as much (Sec. 3.1).
    * The SGD family: the largest of T_SGD, T_L2 and T_wd, whichever regularizer has accumulated most.
      T_wd is read like T_L2 (the paper writes decay as the lambda of K eta lambda); per unit of clock,
      Keras L2 contracts the imbalance twice as fast (exp(-4 T_L2) against exp(-2 T_wd), Figure 9c).
      Ties go to the explicit regularizer (T_L2, then T_wd).

    All clocks use the raw eta_k, as the trainer records them: momentum is not folded in
    (:func:`momentum_note` says by how much it enlarges the effective step).
    """
    if spec["optimizer"] in ADAPTIVE:
        return "T_adapt"
    c = run_clocks(spec) if clocks is None else clocks
    return max(("T_l2", "T_wd", "T_sgd"), key=lambda k: (c[k], -("T_l2", "T_wd", "T_sgd").index(k)))


def _quoted(x: float) -> str:
    """A clock value as the paper writes it: one significant decimal, small ones as mantissa e exponent."""
    if x >= 0.1:
        return f"{x:g}"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


_CUT_SGD, _CUT_L2 = paper.point(lr=1e-2, batch_size=16), paper.point(lr=1e-2, batch_size=128, l2=5e-3)
_KEEP_300, _KEEP_5000 = paper.point(batch_size=128), paper.point(batch_size=128, epochs=5000, schedule="constant")
GOVERNING_RULE = ("  (the paper's reading, Sec. 4.1-4.2: T_adapt for Adam, AdamW and Muon; for the SGD family the largest\n"
                  "  of T_SGD, T_L2 and T_wd: forgetting needs accumulated regularization of order one, read on one scale\n"
                  f"  for both kinds of clock; in the paper's constant-lr arithmetic T_SGD {_quoted(_CUT_SGD.clocks['T_sgd'])} and "
                  f"T_L2 {_quoted(_CUT_L2.clocks['T_l2'])} cut the spread\n"
                  f"  to {_CUT_SGD.text} and {_CUT_L2.text} pp, T_SGD {_quoted(_KEEP_300.clocks['T_sgd'])} to {_quoted(_KEEP_5000.clocks['T_sgd'])} "
                  f"keeps {_KEEP_5000.text} pp)")


def momentum_note(spec: dict[str, Any]) -> str | None:
    """How momentum is treated: the clocks use the raw eta_k; a heavy ball of momentum m takes
    ~1 / (1 - m) larger effective steps in steady state. None when the recipe has no SGD momentum."""
    m = resolve_momentum(spec["optimizer"], spec.get("momentum"))
    if spec["optimizer"] in ADAPTIVE or m <= 0:
        return None
    if m >= 1:
        return f"momentum {m:g}: the clocks use the raw eta_k; a momentum of 1 has no steady-state effective step"
    f = 1 / (1 - m)
    return (f"momentum {m:g}: the clocks above use the raw eta_k, as the trainer records them (not folded in). The heavy\n"
            f"  ball takes ~1/(1 - m) = {f:.3g}x larger effective steps eta / (1 - m): with those, T_SGD would be ~{f * f:.3g}x\n"
            f"  and T_L2 ~{f:.3g}x larger; decoupled decay (the default) acts outside the velocity, so T_wd is not enlarged.")


def paper_points() -> list[dict[str, Any]]:
    """The paper's measured points: ``spec``, ``kind``, ``spread_pp``, ``where``, ``quoted`` (the paper's
    constant-lr values, by clock), ``exact`` (every clock under the schedule the point's runs used:
    :func:`initmem.engine.clocks.run_clocks`) and ``constant_lr`` (the paper's arithmetic for the same recipe)."""
    rows = []
    for overrides, spread, quoted, where in PAPER_POINTS:
        spec = recipe(**overrides)
        rows.append({"spec": spec, "kind": recipe_kind(spec), "spread_pp": spread, "where": where, "quoted": quoted,
                     "exact": run_clocks(spec), "constant_lr": paper_constant_lr_clocks(spec)})
    return rows


def describe(spec: dict[str, Any]) -> str:
    """A recipe in a few words: optimizer, lr and schedule, b, epochs, L2 and decay where set."""
    text = f"{spec['optimizer']} lr {spec['lr']:g} {spec['schedule']}"
    text += f" (alpha {spec['alpha']:g})" if spec["schedule"] == "cosine" else ""
    text += f", b {spec['batch_size']}, {spec['epochs']} epochs"
    text += f", L2 {spec['l2']:g}" if spec.get("l2") else ""
    wd = resolve_weight_decay(spec["optimizer"], spec.get("weight_decay"))
    return text + (f", wd {wd:g}" if wd else "")


def orders_apart(a: float, b: float) -> float:
    """|log10(a / b)|: the distance of two clocks in orders of magnitude (inf if either is not > 0)."""
    return abs(math.log10(a / b)) if a > 0 and b > 0 else math.inf


def nearest_point(spec: dict[str, Any], clock: str, value: float, points: list[dict] | None = None) -> dict[str, Any] | None:
    """The paper's measured point of the same kind as ``spec`` nearest to ``value`` on ``clock`` (both
    exact), as {"point", "orders" (|log10 ratio|), "out_of_range" (orders > OUT_OF_RANGE_ORDERS)};
    None when the paper measured no recipe of this kind."""
    kind = recipe_kind(spec)
    same = [p for p in (paper_points() if points is None else points) if p["kind"] == kind and p["exact"][clock] > 0]
    if not same:
        return None
    best = min(same, key=lambda p: orders_apart(p["exact"][clock], value))
    orders = orders_apart(best["exact"][clock], value)
    return {"point": best, "orders": orders, "out_of_range": orders > OUT_OF_RANGE_ORDERS}


def ladder_clocks(spec: dict[str, Any]) -> list[str]:
    """The clocks a recipe's printout ranks the paper's points on: T_adapt for adaptive optimizers, else
    T_SGD and each explicit regularizer's clock the recipe has."""
    if spec["optimizer"] in ADAPTIVE:
        return ["T_adapt"]
    wd = resolve_weight_decay(spec["optimizer"], spec.get("weight_decay"))
    return ["T_sgd"] + (["T_l2"] if spec.get("l2") else []) + (["T_wd"] if wd else [])


def _nearest_text(clock: str, value: float, near: dict[str, Any] | None, kind: str) -> str:
    if near is None:
        return f"nearest paper point: none: the paper measured no recipe of this kind ({kind}); out of range"
    p = near["point"]
    flag = (f"  OUT OF RANGE (> {OUT_OF_RANGE_ORDERS:g} order of magnitude): the paper's spreads say nothing here"
            if near["out_of_range"] else "")
    return (f"nearest paper point of this kind on {CLOCK_NAMES[clock]} (both exact): {p['exact'][clock]:.4g}, "
            f"{near['orders']:.2f} orders of magnitude from {value:.4g}{flag}\n"
            f"  spread {p['spread_pp']} pp: {describe(p['spec'])} ({p['where']})")


def report(spec: dict[str, Any]) -> str:
    """The calculator's printout: a recipe's exact clocks, the paper's constant-lr arithmetic for it,
    its governing clock with the nearest paper point of the same kind, and the ladders of that kind."""
    c = run_clocks(spec)
    const = paper_constant_lr_clocks(spec)
    kind = recipe_kind(spec)
    points = paper_points()
    lines = [f"recipe: {describe(spec)}, n_train {spec['n_train']} (kind: {kind})",
             f"steps: {c['steps_per_epoch']} per epoch (ceil(n_train / b)), {c['total_steps']} in all",
             "exact clocks under this recipe's own schedule (the sums the trainer records):",
             f"  T_SGD   = sum eta_k^2 / b  = {c['T_sgd']:.6g}",
             f"  T_L2    = sum eta_k * l2   = {c['T_l2']:.6g}",
             f"  T_wd    = sum eta_k * wd   = {c['T_wd']:.6g}   (wd {c['weight_decay']:g})",
             f"  T_adapt = sum eta_k        = {c['T_adapt']:.6g}",
             f"the paper's constant-lr arithmetic for the same recipe (Sec. 4.2: \"Ignoring cosine decay and using "
             f"K ~ E n_train/b\", K = {const['K']:g}; compare only with the paper's quoted values):",
             "  " + ", ".join(f"{CLOCK_NAMES[k]} {const[k]:.4g}" for k in CLOCK_KEYS),
             ""]
    clock = governing_clock(spec, c)
    lines.append(f"governing clock: {CLOCK_NAMES[clock]} = {c[clock]:.4g} (exact)")
    lines.append(GOVERNING_RULE)
    lines.append(_nearest_text(clock, c[clock], nearest_point(spec, clock, c[clock], points), kind))
    note = momentum_note(spec)
    if note:
        lines.append(note)
    lines.append("")
    lines.append(f"The paper's measured points of this kind ({kind}), ranked on each clock (spread = max - min over sigma_w "
                 "of test accuracy, pp; every clock exact under the schedule the point's runs used; [the paper's quoted "
                 "constant-lr value]):")
    same = [p for p in points if p["kind"] == kind]
    if not same:
        lines.append(f"  none: the paper measured no recipe of this kind; its points are of the kinds "
                     f"{sorted({p['kind'] for p in points})}")
    for name in ladder_clocks(spec) if same else []:
        mine = c[name]
        lines.append(f"  {CLOCK_NAMES[name]}:")
        placed = False
        for p in sorted(same, key=lambda p: p["exact"][name]):
            value = p["exact"][name]
            equal = mine > 0 and abs(mine / value - 1) < 1e-9 if value > 0 else mine == 0
            if not placed and mine < value and not equal:
                lines.append(f"    {mine:>10.4g}  <- this recipe")
                placed = True
            quoted = f" [paper, constant-lr: {p['quoted'][name]:g}]" if name in p["quoted"] else ""
            mark = "  <- this recipe (the same clock)" if equal else ""
            lines.append(f"    {value:>10.4g}  spread {p['spread_pp']:>5} pp  {describe(p['spec'])}{quoted}  ({p['where']}){mark}")
            placed = placed or equal
        if not placed:
            lines.append(f"    {mine:>10.4g}  <- this recipe")
    return "\n".join(lines)


def clocks_table(runs_by_study: dict[str, list]) -> list[dict[str, Any]]:
    """One row per configuration (a run spec without sigma_w and seed) of every study: its exact final
    clocks (T_*, as the trainer records them), the paper's constant-lr arithmetic for it (paper_arith_*),
    its kind and governing clock, and the nearest paper point of the same kind on that clock (exact)
    with its distance in orders of magnitude and whether it is out of range."""
    points = paper_points()
    rows = []
    for study, runs in runs_by_study.items():
        seen: dict[str, dict] = {}
        for r in runs:
            if r.config_id in seen:
                seen[r.config_id]["runs"] += 1
                continue
            s = r.spec
            keys = ("variant", "arch", "optimizer", "lr", "schedule", "alpha", "epochs", "batch_size", "l2", "n_train")
            c = run_clocks(s)
            const = paper_constant_lr_clocks(s)
            clock = governing_clock(s, c)
            near = nearest_point(s, clock, c[clock], points)
            p = near["point"] if near else None
            seen[r.config_id] = {
                "study": study, "config_id": r.config_id, **{k: s.get(k) for k in keys},
                "momentum": resolve_momentum(s["optimizer"], s.get("momentum")), "runs": 1, **c,
                **{f"paper_arith_{k}": const[k] for k in CLOCK_KEYS},
                "kind": recipe_kind(s), "governing_clock": clock,
                "paper_nearest_exact": p["exact"][clock] if p else None,
                "paper_nearest_orders": near["orders"] if near else None,
                "out_of_range": near["out_of_range"] if near else True,
                "paper_nearest_spread_pp": p["spread_pp"] if p else None,
                "paper_nearest_recipe": f"{describe(p['spec'])} ({p['where']})" if p else None}
        rows.extend(seen.values())
    return rows


def write_clocks_table(runs_by_study: dict[str, list], out: str) -> int:
    """Write :func:`clocks_table` as CSV atomically (results/tables/clocks.csv); returns the row count."""
    from initmem.io import atomic_path

    rows = clocks_table(runs_by_study)
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["study", "config_id", *CLOCK_KEYS])
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


class _Parser(argparse.ArgumentParser):
    """Errors as one line naming the bad value (exit status 2), not usage + message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


VALUE_OPTIONS = ("--optimizer", "--lr", "--batch-size", "--epochs", "--schedule", "--alpha", "--l2", "--weight-decay",
                 "--momentum", "--n-train")


def _print(text: str) -> None:
    """Print, quietly stopping if the reader has gone (``... | head -1``): no BrokenPipeError traceback."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # the interpreter flushes stdout again at exit: point it at /dev/null so that flush cannot fail
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: list[str]) -> int:
    """``python -m initmem clocks``: print a recipe's exact clocks and place it among the paper's points."""
    parser = _Parser(prog="initmem clocks", description="Exact forgetting clocks of a training recipe (the sums the trainer records), "
                     "placed against the paper's measured points of the same kind.")
    parser.add_argument("--optimizer", default="sgd", help=f"one of {list(OPTIMIZERS)} (default sgd)")
    parser.add_argument("--lr", type=float, required=True, help="peak learning rate eta_0 (> 0)")
    parser.add_argument("--batch-size", type=int, required=True, help="1 .. n_train")
    parser.add_argument("--epochs", type=int, required=True, help=">= 1")
    parser.add_argument("--schedule", default="cosine", help="cosine (default) or constant")
    parser.add_argument("--alpha", type=float, default=0.01, help="cosine floor as a fraction of lr, in [0, 1] (default 0.01)")
    parser.add_argument("--l2", type=float, default=0.0, help="Keras kernel L2 coefficient (loss + l2 sum W^2), >= 0")
    parser.add_argument("--weight-decay", type=float, default=None, help="decoupled decay, >= 0 (default: the optimizer's own)")
    parser.add_argument("--momentum", type=float, default=None, help="SGD-momentum's, in [0, 1] (default: the optimizer's own)")
    parser.add_argument("--n-train", type=int, default=40000, help=f"training images, 1 .. {MAX_N_TRAIN} (default 40000)")
    # "--lr -1e-2" would read as an option to argparse: glue values to their option so the check below names them
    glued, i = [], 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv):
            glued.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            glued.append(argv[i])
            i += 1
    args = parser.parse_args(glued)
    spec = {"optimizer": args.optimizer, "lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs,
            "schedule": args.schedule, "alpha": args.alpha, "l2": args.l2, "weight_decay": args.weight_decay,
            "momentum": args.momentum, "n_train": args.n_train}
    try:
        check_recipe(spec)
    except ValueError as exc:
        parser.error(str(exc))
    _print(report(spec))
    return 0
