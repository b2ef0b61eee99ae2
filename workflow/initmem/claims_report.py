"""claims.csv for reading: ``claims.md``, the verdict counts, and the verdict table the READMEs
carry between the markers :data:`BEGIN` and :data:`END` (one source: an evidence folder's claims.csv)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from initmem import verdicts as V
from initmem.claim_rows import AT_BEST, AT_END

BEGIN, END = "<!-- verdict-table:begin -->", "<!-- verdict-table:end -->"

INTERVALS = (
    "Intervals: a t-interval at level 0.95 around the full-sample statistic, with the delete-one-seed jackknife "
    "standard error and n - 1 degrees of freedom (`ci_method`); for a contrast of seed means it is the t-interval on "
    "the per-seed values, whose coverage is right at any n >= 2 when seed noise is roughly normal. Seeds pair "
    "configurations (one seed, the same init draws); compared configurations are matched on sigma_w values and seeds. "
    "No interval with one seed.")
WORDS = (
    "Verdicts: `reproduced` (interval entirely on the paper's side), `not reproduced` (entirely on the other side), "
    "`inconclusive`; `cannot be decided above the noise floor` (a |beta| shape hidden by the OLS noise, 2 standard "
    "errors); `outside the paper's regime` (a claim about networks trained to fit, measured where fewer than "
    f"{V.REGIME_MIN_FIT:.0%} of a configuration's runs reached 99.5% train accuracy; `statistic alone` keeps what the "
    "interval says); `not testable with one seed`; `not measured` (the config lacks what the claim needs; counted apart).")
READING = ("Read at: `tau_best` (the paper's protocol, the predictor at argmin val loss), `end of training`, or the "
           "`curve over the run`. `fitted`: share of the runs behind a row that reached 99.5% train accuracy; "
           "`tau_best fitted`: share whose tau_best is at or after that epoch.")


def _fmt(v, spec: str = ".3g") -> str:
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else format(float(v), spec)
    return str(v).replace("|", "\\|")  # a literal | would end the Markdown cell


def _interval(lo: float, hi: float) -> str:
    return f"[{_fmt(lo)}, {_fmt(hi)}]" if np.isfinite(lo) and np.isfinite(hi) else ""


def _share(v: float) -> str:
    return "" if not np.isfinite(v) else f"{100 * v:.0f}%"


def directions(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(measured directional rows, not-measured directional rows)."""
    d = table[table["kind"] == "direction"]
    return d[d["verdict"] != V.NOT_MEASURED], d[d["verdict"] == V.NOT_MEASURED]


def counts_line(table: pd.DataFrame) -> str:
    """'N directional claims measured: a reproduced, ...; m not measured.' (the one wording used everywhere)."""
    measured, missing = directions(table)
    counts = measured["verdict"].value_counts()
    words = [f"{counts.get(v, 0)} {v}" for v in V.VERDICTS if v != V.NOT_MEASURED and (counts.get(v, 0) or v in V.VERDICTS[:3])]
    return (f"{len(measured)} directional claims measured: {', '.join(words)}; "
            f"{len(missing)} more not measured (the config lacks what they need).")


def _table(df: pd.DataFrame, cols: dict) -> str:
    """A Markdown table of ``df`` with ``cols``: header -> function of a row."""
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(f(r)) for f in cols.values()) + " |" for _, r in df.iterrows()]
    return "\n".join(lines) + "\n"


def verdict_table(table: pd.DataFrame, compact: bool = False) -> str:
    """The measured directional claims as the READMEs show them (``compact``: four columns, for the
    repository's front page), the interval method and the counts line."""
    measured, missing = directions(table)
    if compact:
        cols = {"claim": lambda r: r["quantity"], "read at": lambda r: r["read_at"],
                "measured [interval]": lambda r: f"{_fmt(r['reproduced'])} {_interval(r['ci_low'], r['ci_high'])}".strip(),
                "verdict (the interval alone)": lambda r: f"**{r['verdict']}**"
                + (f" ({r['statistic_verdict']})" if r["statistic_verdict"] != r["verdict"] else "")}
    else:
        cols = {"claim": lambda r: r["quantity"], "read at": lambda r: r["read_at"], "measured": lambda r: r["reproduced"],
                "interval": lambda r: _interval(r["ci_low"], r["ci_high"]), "paper's side": lambda r: r["paper_side"],
                "statistic alone": lambda r: r["statistic_verdict"], "verdict": lambda r: f"**{r['verdict']}**",
                "fitted": lambda r: _share(r["share_fit"]), "runs": lambda r: int(r["n_runs"])}
    methods = sorted(set(measured["ci_method"]) - {""})
    out = [_table(measured, cols), f"Intervals: {'; '.join(methods) or 'none'} (level 0.95).\n", f"**{counts_line(table)}**\n"]
    if not missing.empty:
        out.append("Not measured: " + ", ".join(f"`{i}`" for i in missing["id"]) + ".\n")
    return "\n".join(out)


def _cells_table(cells: pd.DataFrame) -> str:
    """One line per configuration: spread and |beta| at tau_best and at the end of training."""
    rows = []
    for name, g in cells.groupby(cells["quantity"].str.split(": ").str[0], sort=False):
        get = lambda what, at, g=g: g[g["id"].str.contains(f"_{what}_") & (g["read_at"] == at)].iloc[0]  # noqa: E731
        r = {"configuration": name, "clocks": g["note"].iloc[0]}
        for what, label in (("spread", "spread (pp)"), ("beta", "|beta|")):
            for at in (AT_BEST, AT_END):
                x = get(what, at)
                r[f"{label} at {at}"] = f"{_fmt(x['reproduced'])} {_interval(x['ci_low'], x['ci_high'])}".strip()
        first = g.iloc[0]
        r |= {"fitted": _share(first["share_fit"]), "tau_best fitted": _share(first["share_best_fitted"]), "runs": int(first["n_runs"])}
        rows.append(r)
    df = pd.DataFrame(rows)
    return _table(df, {c: (lambda r, c=c: r[c]) for c in df.columns})


def claims_markdown(table: pd.DataFrame) -> str:
    """claims.csv rendered for reading: verdicts first, then the configurations read at two points,
    the headline numbers and the clock arithmetic; the scale of each study once, at the top."""
    out = ["# The paper's claims beside ours\n", INTERVALS + "\n", WORDS + "\n", READING + "\n"]
    measured_rows = table[(table["kind"] != "clock") & ~table["scale"].str.startswith("not in this config")]
    scales = sorted({part for s in measured_rows["scale"] for part in s.split("; ") if part})
    if scales:
        out += ["Measured at:\n", "\n".join(f"- {s}" for s in scales) + "\n"]
    measured, missing = directions(table)
    if not measured.empty or not missing.empty:
        out.append(f"**{counts_line(table)}**\n")
    if not measured.empty:
        cols = {"id": lambda r: r["id"], "quantity": lambda r: r["quantity"], "read at": lambda r: r["read_at"],
                "paper": lambda r: r["paper"], "measured": lambda r: r["reproduced"],
                "interval": lambda r: _interval(r["ci_low"], r["ci_high"]), "method": lambda r: r["ci_method"],
                "paper's side": lambda r: r["paper_side"], "statistic alone": lambda r: r["statistic_verdict"],
                "verdict": lambda r: r["verdict"], "fitted": lambda r: _share(r["share_fit"]),
                "tau_best fitted": lambda r: _share(r["share_best_fitted"]), "runs": lambda r: int(r["n_runs"]),
                "note": lambda r: r["note"]}
        out += ["## Directional claims\n", _table(measured, cols)]
    if not missing.empty:
        out += ["## Not measured\n", _table(missing, {"id": lambda r: r["id"], "quantity": lambda r: r["quantity"],
                                                      "why": lambda r: r["note"]})]
    cells = table[table["kind"] == "cell"]
    if not cells.empty:
        out += ["## Configurations read at two points\n",
                "Each configuration of the clock studies once (a configuration two studies share counts once): the spread "
                "(max - min over sigma_w of the seed-mean test accuracy) and |beta| (OLS slope of the validation accuracy on "
                "sigma_w), at tau_best and at the end of training, with their intervals (rows `cell_*` of claims.csv).\n",
                _cells_table(cells)]
    n = table[table["kind"] == "number"]
    if not n.empty:
        out += ["## Headline numbers\n", _table(n, {"id": lambda r: r["id"], "quantity": lambda r: r["quantity"], "paper": lambda r: r["paper"],
                                                     "measured": lambda r: r["reproduced"],
                                                     "interval": lambda r: _interval(r["ci_low"], r["ci_high"]),
                                                     "fitted": lambda r: _share(r["share_fit"]), "runs": lambda r: int(r["n_runs"]),
                                                     "note": lambda r: r["note"]})]
    c = table[table["kind"] == "clock"]
    if not c.empty:
        out += ["## Forgetting timescales\n", _table(c, {k: (lambda r, k=k: r[k]) for k in ("id", "quantity", "paper", "reproduced",
                                                                                              "exact_as_run", "scale")})]
    return "\n".join(out)


# --- the README blocks -------------------------------------------------------------------------

SHORT = {V.REPRODUCED: "reproduced", V.NOT_REPRODUCED: "not reproduced", V.INCONCLUSIVE: "inconclusive",
         V.NOT_MEASURED: "-"}


def _tier_cell(r: pd.Series | None) -> str:
    """One tier's word for a claim: its verdict, and what the interval alone says where they differ."""
    if not isinstance(r, pd.Series) or r["verdict"] == V.NOT_MEASURED:  # NaN: the folder has no such row
        return "-"
    word = f"**{SHORT.get(r['verdict'], r['verdict'])}**"
    return word + (f" ({SHORT.get(r['statistic_verdict'], r['statistic_verdict'])})" if r["statistic_verdict"] != r["verdict"] else "")


def tiers_table(tables: dict[str, pd.DataFrame]) -> str:
    """The directional claims side by side, one column per evidence folder (claims measured in at
    least one; '-' where a folder does not measure it at that setting), then each folder's counts line."""
    rows: dict[tuple[str, str], dict] = {}
    for name, table in tables.items():
        for _, r in directions(table)[0].iterrows():
            # keyed by id and wording: a claim measured at another setting in another folder gets its own row
            label = r["quantity"] + (f", read at the {r['read_at']}" if r.get("read_at") == AT_END else "")
            rows.setdefault((r["id"], label), {"claim": label})[name] = r
    cols = {"claim": lambda r: r["claim"]} | {f"`{n}`": (lambda r, n=n: _tier_cell(r.get(n))) for n in tables}
    out = [_table(pd.DataFrame(list(rows.values())), cols) if rows else "No directional claim measured.\n"]
    out += [f"`{n}`: **{counts_line(t)}**\n" for n, t in tables.items()]
    return "\n".join(out)


def readme_block(folders: list[Path], root: Path, compact: bool = False) -> str:
    """The verdict tables of the evidence ``folders`` (from each one's tables/claims.csv), with the
    command that regenerates them; ``compact`` (the repository's README): every folder side by side
    in one table, the verdict words only (the interval alone in brackets where it says otherwise)."""
    out = ["<!-- generated by `python -m initmem reanalyse`: edit the claims, not this table -->\n"]
    tables = {f.name: pd.read_csv(f / "tables" / "claims.csv", keep_default_na=False, na_values=[""]) for f in folders}
    if compact:
        return "\n".join(out + [tiers_table(tables)]).rstrip() + "\n"
    for f in folders:
        out += [f"Verdicts of `{f.resolve().relative_to(root.resolve())}` (`tables/claims.md`):\n", verdict_table(tables[f.name])]
    return "\n".join(out).rstrip() + "\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the :data:`BEGIN` and :data:`END` lines replaced by ``block``."""
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"no {BEGIN} ... {END} block to fill")
    return text[: start + len(BEGIN)] + "\n" + block + text[stop:]
