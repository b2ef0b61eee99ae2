"""What the decisive tier's design said it would decide, beside what its claims table decided.

Reads this folder's ``tables/claims.csv`` (written by the workflow and by ``.venv/bin/python -m
initmem reanalyse``) and prints one Markdown row per designed claim: the chance of a decision the
design computed before training (``DESIGN.md``, ``design_power.md``), what the row's
statistic decided, the verdict after the paper's regime, the estimate and interval, the share of
runs that fit, and the row's own ``would decide``.

    PYTHONPATH=workflow .venv/bin/python evidence/jpeg-cifar10-decisive/design_outcome.py > evidence/jpeg-cifar10-decisive/design_outcome.md
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from initmem.reports.verdict_tables import format_interval, format_number  # the READMEs' number and interval format

HERE = Path(__file__).resolve().parent
DECIDED = ("reproduced", "not reproduced")
# (claim, claims-table row or spreads.csv configuration, P(decision) of the design, DESIGN.md's table)
DESIGNED = (
    ("a. low-lr SGD keeps a large sigma_w spread, b=16", "sgd_keeps_spread_b16", "100%"),
    ("a. same at b=32", "sgd_keeps_spread_b32", "100%"),
    ("b. Adam's spread < SGD's, b=16", "sgd_gt_adam_b16", "100%"),
    ("b. same, b=32", "sgd_gt_adam_b32", "99%"),
    ("c. SGD's |beta(t)| stays flat", "beta_flat_sgd_b16", "100% (flat truth) / 90% (the clock tier's rise)"),
    ("c. Adam's |beta(t)| falls >= 1 order (dropped by the design)", "beta_decay_adam_b16", "~0% (dropped)"),
    ("d. Adam at 3 b, one lr, align under T_adapt (|beta| curves)", "collapse_beta_adam_T_adapt", "86% (as the table reads it)"),
    ("d. same (spread curves)", "collapse_spread_adam_T_adapt", "99%"),
    ("e. a larger lr lowers SGD's spread (lr 1e-3 vs 1e-1, b=16)", "lr_reduces_sgd_b16_0.001_to_0.1", "100%"),
)


def _claims_row(claims: pd.DataFrame, cid: str) -> dict:
    r = claims.loc[cid]
    statistic = r["statistic_verdict"] if isinstance(r["statistic_verdict"], str) else ("reproduced" if r["ci_low"] > 0 else "inconclusive")
    verdict = r["verdict"] if isinstance(r["verdict"], str) and r["verdict"] else "(a number: no regime rule)"
    if isinstance(r.get("verdict_holm"), str) and r["verdict_holm"] != r["verdict"]:
        verdict += f" ({r['verdict_holm']} after Holm)"
    fit = "" if math.isnan(r["share_fit"]) else f"{100 * r['share_fit']:.0f}%"
    return {"row": f"`{cid}`", "statistic": statistic, "verdict": verdict, "measured": f"{format_number(r['reproduced'])} {format_interval(r['ci_low'], r['ci_high'])}",
            "fit": fit, "would": r["would_decide"] if isinstance(r["would_decide"], str) else ""}


def outcome(folder: Path = HERE) -> str:
    claims = pd.read_csv(folder / "tables" / "claims.csv").set_index("id")
    out = ["| designed claim | row | P(decision), design | statistic alone | verdict | measured [interval] | runs fitted | would decide |",
           "|---|---|---|---|---|---|---|---|"]
    hits = 0
    for claim, where, planned in DESIGNED:
        r = _claims_row(claims, where)
        designed = "dropped" not in claim
        hits += designed and r["statistic"] in DECIDED
        cells = (claim, r["row"], planned, r["statistic"], r["verdict"], r["measured"], r["fit"], r["would"])
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")  # a literal | would end the cell
    n = sum("dropped" not in c for c, *_ in DESIGNED)
    out += ["", f"The statistic decides {hits} of the {n} designed rows (reproduced or not reproduced)."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(outcome())
