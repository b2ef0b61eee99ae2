"""claims.csv for reading: ``claims.md``, the verdict counts, and the verdict table the READMEs
carry between the markers :data:`BEGIN` and :data:`END` (one source: an evidence folder's claims.csv)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from initmem.claims.catalogue import REGISTRY, lookup, registry_markdown
from initmem.claims.rows import AT_BEST, AT_END
from initmem.claims.similarity import section
from initmem.stats import power as P
from initmem.stats import verdicts as V

BEGIN, END = "<!-- verdict-table:begin -->", "<!-- verdict-table:end -->"

INTERVALS = (
    "Intervals: for contrasts and ratios, a t-interval at level 0.95 around the full-sample statistic, with the delete-one-seed "
    "jackknife standard error and n - 1 degrees of freedom (`ci_method`); for a contrast of seed means it is the t-interval on "
    "the per-seed values, whose coverage is right at any n >= 2 when seed noise is roughly normal. A single spread (max - min "
    "over sigma_w) is positive even when sigma_w does nothing (`null_mean`: its mean then): whether sigma_w matters is "
    "the paired t-test of the grid's end sigma_w values (`p_null`, exact whatever the variance at each sigma_w); its interval "
    "runs from that pair's |difference| less its t half-width to the largest pair's plus its t half-width (an intersection-union "
    "bound: the pair that attains the true spread misses its own bound at most 2.5% of the time). "
    "The clock's exponent: a seed bootstrap of the best-collapsing exponent. Seeds pair "
    "configurations (one seed, the same init draws); compared configurations are matched on sigma_w values and seeds. "
    "No interval with one seed.")
WORDS = (
    "Verdicts: `reproduced` (interval entirely on the paper's side; for a margin `in [a, b]`: inside it), `not reproduced` "
    "(entirely on the other side; for a margin: wholly outside it), `inconclusive`; `partly tested` (a claim with parts, a "
    "clock's p and q, whose design identifies only some: the tested part agrees with the paper, `statistic alone` says so); "
    "`after Holm`: the verdict that stands after Holm's step-down adjustment of each row's one-sided p across the tier's "
    "tested rows (the counts are these); `cannot be decided above the noise floor` (a |beta| shape hidden by the OLS noise, 2 standard "
    "errors); `outside the paper's regime` (read outside the regime the paper's sentence states, `regime`: a "
    "configuration none of whose runs reached 99.5% train accuracy, or a clock outside the range the paper's runs reached; "
    "`statistic alone` keeps what the interval says); `not testable with one seed`; `not measured` (the config lacks what the claim needs; counted apart).")
READING = ("Read at: `tau_best` (the paper's protocol, the predictor at argmin val loss), `end of training`, or the "
           "`curve over the run`. `fitted`: share of the runs behind a row that reached 99.5% train accuracy; "
           "`tau_best fitted`: share whose tau_best is at or after that epoch.")


def format_number(v, spec: str = ".3g") -> str:
    """A number as the READMEs and claims tables print it (3 significant digits; NaN: empty), anything else as a Markdown-safe string."""
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else format(float(v), spec)
    return str(v).replace("|", "\\|")  # a literal | would end the Markdown cell


def format_interval(lo: float, hi: float) -> str:
    """``[lo, hi]`` in :func:`format_number`'s digits, open at an infinite end; empty when either end is NaN."""
    if np.isnan(lo) or np.isnan(hi):
        return ""
    return f"{'(' if np.isinf(lo) else '['}{format_number(lo)}, {format_number(hi)}{')' if np.isinf(hi) else ']'}"  # an infinite end is open


def _share(v: float) -> str:
    return "" if not np.isfinite(v) else f"{100 * v:.0f}%"


def directions(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(measured directional rows, not-measured directional rows)."""
    d = table[table["kind"] == "direction"]
    return d[d["verdict"] != V.NOT_MEASURED], d[d["verdict"] == V.NOT_MEASURED]


def _final(rows: pd.DataFrame) -> pd.Series:
    """Each row's verdict after Holm's adjustment across its tier (:mod:`initmem.stats.multiplicity`)."""
    return rows["verdict_holm"] if "verdict_holm" in rows else rows["verdict"]


ROWS_DISAGREE = "whose rows disagree"  # a finding whose rows end in different verdicts


def finding_keys(rows: pd.DataFrame) -> pd.Series:
    """Each row's finding: the runs it reads (``runs_read``: rows on the same runs are one finding), or
    the row alone where it names none."""
    runs = rows["runs_read"] if "runs_read" in rows else pd.Series("", index=rows.index)
    named = runs.fillna("").astype(str)
    return named.where(named != "", "row:" + rows["id"].astype(str))


def finding_words(rows: pd.DataFrame) -> pd.Series:
    """Per finding (:func:`finding_keys`), the verdict after Holm its rows share, or :data:`ROWS_DISAGREE`."""
    final = _final(rows)
    return final.groupby(finding_keys(rows), sort=False).agg(lambda v: v.iloc[0] if v.nunique() == 1 else ROWS_DISAGREE)


def counts_line(table: pd.DataFrame) -> str:
    """'N directional claims measured[, F findings], familywise after Holm: a reproduced, ...; m not
    measured.' (the one wording used everywhere), from the decisions that stand after Holm's adjustment
    across the tier's tested rows, counted per finding: rows that read the same runs (one phenomenon
    read by several statistics) count once, with their shared verdict or as one whose rows disagree."""
    measured, missing = directions(table)
    words_of = finding_words(measured)
    counts = words_of.value_counts()
    words = [f"{counts.get(v, 0)} {v}" for v in (*V.VERDICTS, ROWS_DISAGREE)
             if v != V.NOT_MEASURED and (counts.get(v, 0) or v in V.VERDICTS[:3])]
    lost = int((_final(measured) != measured["verdict"]).sum())
    holm = f" ({lost} decision{'s' if lost != 1 else ''} undone by Holm's adjustment across the tier)" if lost else ""
    findings = (f", {len(words_of)} findings (rows that read the same runs count once)" if len(words_of) < len(measured) else "")
    return (f"{len(measured)} directional claims measured{findings}, familywise after Holm: {', '.join(words)}{holm}; "
            f"{len(missing)} more not measured (the config lacks what they need).")


def shared_findings(name: str, table: pd.DataFrame) -> list[str]:
    """One line per finding that several measured rows read (the same runs): 'N rows, 1 finding', each row with its verdict."""
    measured = directions(table)[0]
    keys, final = finding_keys(measured), _final(measured)
    out = []
    for key, rows in measured.groupby(keys, sort=False):
        if len(rows) > 1:
            word = finding_words(measured)[key]
            runs = int(pd.to_numeric(rows["n_runs"], errors="coerce").max()) if "n_runs" in rows else 0
            listed = ", ".join(f"`{r['id']}` ({final[i]})" for i, r in rows.iterrows())
            out.append(f"- `{name}`: {len(rows)} rows, 1 finding (the same {runs} runs): **{word}**; its rows: {listed}")
    return out


def _table(df: pd.DataFrame, cols: dict) -> str:
    """A Markdown table of ``df`` with ``cols``: header -> function of a row."""
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(format_number(f(r)) for f in cols.values()) + " |" for _, r in df.iterrows()]
    return "\n".join(lines) + "\n"


def verdict_table(table: pd.DataFrame, compact: bool = False) -> str:
    """The measured directional claims as the READMEs show them (``compact``: four columns, for the
    repository's front page), the interval method and the counts line."""
    measured, missing = directions(table)
    if compact:
        cols = {"claim": lambda r: r["quantity"], "read at": lambda r: r["read_at"],
                "measured [interval]": lambda r: f"{format_number(r['reproduced'])} {format_interval(r['ci_low'], r['ci_high'])}".strip(),
                "verdict (the interval alone)": lambda r: f"**{r['verdict']}**"
                + (f" ({r['statistic_verdict']})" if r["statistic_verdict"] != r["verdict"] else "")}
    else:
        cols = {"claim": lambda r: r["quantity"], "read at": lambda r: r["read_at"], "measured": lambda r: r["reproduced"],
                "interval": lambda r: format_interval(r["ci_low"], r["ci_high"]), "paper's side": lambda r: r["paper_side"],
                "statistic alone": lambda r: r["statistic_verdict"], "verdict": lambda r: f"**{r['verdict']}**",
                "after Holm": lambda r: f"{r.get('verdict_holm', '')} (p {format_number(r.get('p_holm', math.nan), '.2g')})"
                if np.isfinite(r.get("p_holm", math.nan)) else "",
                "selected fit": lambda r: _share(r["share_best_fitted"]), "runs": lambda r: int(r["n_runs"]),
                "would decide": lambda r: r.get("would_decide", "")}
    methods = sorted(set(measured["ci_method"]) - {""})
    out = [_table(measured, cols), f"Intervals: {'; '.join(methods) or 'none'} (level 0.95).\n", f"**{counts_line(table)}**\n"]
    shared = shared_findings("this tier", table)
    if shared:
        out.append("Findings read by several rows (counted once):\n\n" + "\n".join(shared) + "\n")
    outside = measured[measured["verdict"] == V.OUTSIDE_REGIME]
    if not compact and not outside.empty:
        out.append("Outside the paper's regime, and why (the regime each sentence states: `initmem/claims/catalogue/`):\n\n"
                   + "\n".join(f"- `{r['id']}`: {_regime_reason(r['note'])}" for _, r in outside.iterrows()) + "\n")
    if not missing.empty:
        out.append("Not measured: " + ", ".join(f"`{i}`" for i in missing["id"]) + ".\n")
    return "\n".join(out)


def _regime_reason(note: str) -> str:
    """The regime part of a row's note, each reason without its explanation, at most three of them."""
    reason = note.split(f"{V.OUTSIDE_REGIME} ", 1)[1] if f"{V.OUTSIDE_REGIME} " in note else note
    parts = [re.split(r" \(|, fewer than", p.strip().removeprefix("by "))[0] for p in reason.split("; by ")]
    return "; ".join(f"by {p}" for p in parts[:3]) + (f"; and {len(parts) - 3} more (the row's note)" if len(parts) > 3 else "")


def _cells_table(cells: pd.DataFrame) -> str:
    """One line per configuration: spread and |beta| at tau_best and at the end of training."""
    rows = []
    for name, g in cells.groupby(cells["quantity"].str.split(": ").str[0], sort=False):
        get = lambda what, at, g=g: g[g["id"].str.contains(f"_{what}_") & (g["read_at"] == at)].iloc[0]
        r = {"configuration": name, "clocks at the end": get("spread", AT_END)["note"].split("; ")[0],
             "clocks at tau_best": get("spread", AT_BEST)["note"].split("; ")[0]}
        for what, label in (("spread", "spread (pp)"), ("beta", "|beta|")):
            for at in (AT_BEST, AT_END):
                x = get(what, at)
                r[f"{label} at {at}"] = f"{format_number(x['reproduced'])} {format_interval(x['ci_low'], x['ci_high'])}".strip()
                if what == "spread":
                    r[f"{label} at {at}"] += f", noise-only {format_number(x.get('null_mean', math.nan))}, p {format_number(x.get('p_null', math.nan), '.2g')}"
                else:
                    r[f"{label} at {at}"] += f" ({x['note'].split('; ')[-1]})"
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
                "interval": lambda r: format_interval(r["ci_low"], r["ci_high"]), "method": lambda r: r["ci_method"],
                "paper's side": lambda r: r["paper_side"], "statistic alone": lambda r: r["statistic_verdict"],
                "verdict": lambda r: r["verdict"], "fitted": lambda r: _share(r["share_fit"]),
                "tau_best fitted": lambda r: _share(r["share_best_fitted"]), "runs": lambda r: int(r["n_runs"]),
                "would decide": lambda r: r.get("would_decide", ""), "note": lambda r: r["note"]}
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
                                                     "interval": lambda r: format_interval(r["ci_low"], r["ci_high"]),
                                                     "noise-only mean": lambda r: r.get("null_mean", math.nan),
                                                     "p (noise)": lambda r: r.get("p_null", math.nan),
                                                     "fitted": lambda r: _share(r["share_fit"]), "runs": lambda r: int(r["n_runs"]),
                                                     "note": lambda r: r["note"]})]
    out += ["## The claims tested (`initmem/claims/catalogue/`, one file per family)\n", registry_markdown()]
    c = table[table["kind"] == "clock"]
    if not c.empty:
        out += ["## Forgetting timescales\n", _table(c, {k: (lambda r, k=k: r[k]) for k in ("id", "quantity", "paper", "reproduced",
                                                                                              "exact_as_run", "scale")})]
    return "\n".join(out)


# --- the README blocks -------------------------------------------------------------------------

def what_size_decides(table: pd.DataFrame) -> str:
    """What this folder's size can and cannot decide, from its rows: the decided rows, and for the
    undecided ones the seeds (or seeds x sigma_w grid) the power column says would decide them."""
    measured = directions(table)[0]
    decided = measured[measured["statistic_verdict"].isin([V.REPRODUCED, V.NOT_REPRODUCED])]
    open_ = measured[measured["statistic_verdict"].isin([V.INCONCLUSIVE, V.UNDECIDABLE, V.BELOW_FLOOR])]
    seeds = pd.Series([n for t in open_["would_decide"].fillna("").astype(str) if (n := P.seeds_for_half(t)) is not None], dtype=float)
    nums = measured["n_seeds"][measured["n_seeds"] > 0]
    few, many = (int(nums.min()), int(nums.max())) if len(nums) else (0, 0)
    lines = [f"**What this size decides.** With {few if few == many else f'{few}-{many}'} seeds per "
             f"configuration, the intervals alone decide {len(decided)} of {len(measured)} measured claims "
             f"(`statistic alone`: reproduced or not reproduced); {len(open_)} {'stays' if len(open_) == 1 else 'stay'} open."]
    if len(seeds):
        need = (f"that open row would need ~{int(seeds.iloc[0])} seeds per configuration (" if len(seeds) == 1 else
                f"those open rows would need ~{int(seeds.min())}-{int(seeds.max())} seeds per configuration (median {int(seeds.median())}; ")
        lines.append(f"At the measured effects and noise {need}column `would decide`: the seeds at which the row's own rule, "
                     "simulated from its fitted means and noise, decides with 50% chance; for |beta| shapes below the floor, "
                     "seeds x Sxx of the sigma_w grid, since the noise floor is 2 sigma_r / sqrt(seeds x Sxx)).")
    return " ".join(lines) + "\n"


def _family(cid: str) -> str:
    claim = lookup(cid)
    return claim.family if claim else "other"


def _short_counts(rows: pd.DataFrame) -> str:
    counts = _final(rows).value_counts()
    return ", ".join(f"{counts[v]} {SHORT_WORD.get(v, v)}" for v in V.VERDICTS if counts.get(v, 0))


SHORT_WORD = {V.OUTSIDE_REGIME: "outside the regime", V.BELOW_FLOOR: "below the noise floor", V.ONE_SEED: "one seed"}


# Claims the table reads in halves (each half its own row): the paper's one sentence holds only when every half does.
SPLIT = {r"beta_(flat|level)_(?P<rest>sgd_b\d+)": "SGD |beta| 'stays flat near 1e-1' at {rest}: the range and the level"}


def _split_key(cid: str) -> tuple[str, str] | None:
    """(group key, the claim's wording) of a row that is one half of a split claim; None otherwise."""
    for pattern, text in SPLIT.items():
        m = re.fullmatch(pattern, cid)
        if m:
            return pattern + m.group("rest"), text.format(rest=m.group("rest").replace("sgd_", ""))
    return None


def _whole(verdicts: list[str]) -> str:
    """A split claim's word from its halves': reproduced only when every half is, not reproduced when one is."""
    if all(v == V.REPRODUCED for v in verdicts):
        return V.REPRODUCED
    return V.NOT_REPRODUCED if V.NOT_REPRODUCED in verdicts else "undecided"


def decided_lines(name: str, table: pd.DataFrame) -> list[str]:
    """The evidence page's decided rows of one folder: each decided row with its number, interval and the
    paper's side; a finding several rows read (the same runs: :func:`finding_keys`) is one line with its rows, where
    any of them is decided; a half of a split claim (:data:`SPLIT`) is shown with its other halves and the whole's word."""
    measured = directions(table)[0]
    lines, seen = [], set()
    keys = finding_keys(measured)
    several = keys.map(keys.value_counts()) > 1
    for i, r in measured.iterrows():
        if several[i]:
            if keys[i] not in seen and measured.loc[keys == keys[i], "verdict"].isin([V.REPRODUCED, V.NOT_REPRODUCED, V.PARTLY_TESTED]).any():
                seen.add(keys[i])
                lines.append(_finding_line(name, measured[keys == keys[i]], finding_words(measured)[keys[i]]))
            continue
        split = _split_key(r["id"])
        if split is None:
            if r["verdict"] in (V.REPRODUCED, V.NOT_REPRODUCED, V.PARTLY_TESTED):
                word = r["verdict"] + (f" (tested part: {r['statistic_verdict']})" if r["verdict"] == V.PARTLY_TESTED else "")
                holm = "" if r.get("verdict_holm", r["verdict"]) == r["verdict"] else f"; **{r['verdict_holm']}** after Holm (p {format_number(r['p_holm'], '.2g')})"
                lines.append(f"- `{name}`: {r['quantity']}: **{word}**, {format_number(r['reproduced'])} "
                             f"{format_interval(r['ci_low'], r['ci_high'])} (paper's side {r['paper_side']}{holm})")
            continue
        key, text = split
        halves = measured[measured["id"].map(lambda c, key=key: (_split_key(c) or ("",))[0] == key)]
        if key in seen or not halves["verdict"].isin([V.REPRODUCED, V.NOT_REPRODUCED]).any():
            continue
        seen.add(key)
        parts = "; ".join(f"{h['quantity']}: {h['verdict']}, {format_number(h['reproduced'])} {format_interval(h['ci_low'], h['ci_high'])}".rstrip()
                          for _, h in halves.iterrows())
        lines.append(f"- `{name}`: {text}: **{_whole(list(halves['verdict']))}** (its halves: {parts})")
    return lines


def _finding_line(name: str, rows: pd.DataFrame, word: str) -> str:
    """A decided finding read by several rows: its word after Holm, each row with its verdict, number and interval."""
    parts = "; ".join(f"{h['quantity']}: {h['verdict']}, {format_number(h['reproduced'])} {format_interval(h['ci_low'], h['ci_high'])}".rstrip()
                      for _, h in rows.iterrows())
    return f"- `{name}`: one finding read by {len(rows)} rows on the same runs: **{word}** (its rows: {parts})"


def family_table(tables: dict[str, pd.DataFrame]) -> str:
    """Per claim family (:mod:`initmem.claims.catalogue`) and evidence folder, the verdict counts of the
    measured directional claims (rows) after Holm; a family no folder measures is left out."""
    fams = list(dict.fromkeys(c.family for c in REGISTRY)) + ["other"]
    rows = []
    for fam in fams:
        r = {"claim family": fam}
        for name, table in tables.items():
            measured = directions(table)[0]
            mine = measured[measured["id"].map(_family) == fam]
            r[f"`{name}`"] = _short_counts(mine) if not mine.empty else "not measured"
        if any(v != "not measured" for k, v in r.items() if k != "claim family"):
            rows.append(r)
    df = pd.DataFrame(rows)
    return _table(df, {c: (lambda r, c=c: r[c]) for c in df.columns}) if rows else "No directional claim measured.\n"


def family_summary(tables: dict[str, pd.DataFrame]) -> str:
    """The evidence page's summary: :func:`family_table`, then every decided row (reproduced or not)
    with its number, interval and the paper's side, a split claim's halves and a finding's rows together
    (:func:`decided_lines`); the findings several rows read (:func:`shared_findings`); each folder's counts
    line (per finding)."""
    out = [family_table(tables)]
    decided = [line for name, table in tables.items() for line in decided_lines(name, table)]
    out.append("Decided rows:\n\n" + ("\n".join(decided) if decided else "none") + "\n")
    shared = [line for name, table in tables.items() for line in shared_findings(name, table)]
    if shared:
        out.append("Findings read by several rows (the counts below count each once):\n\n" + "\n".join(shared) + "\n")
    out += [f"`{n}`: **{counts_line(t)}**\n" for n, t in tables.items()]
    return "\n".join(out)


# The pages whose verdict blocks :func:`readme_block` fills, by what they show (initmem.evidence fills them).
VIEWS = {
    "tier": "a tier's README (evidence/<tier>/README.md): its full verdict table, what its size decides, its runs",
    "summary": "the evidence page (evidence/README.md): every tier's family table, decided rows, shared findings, counts lines",
    "front": "the repository's README: the family x tiers table only, and a link to the evidence page",
}
EVIDENCE_PAGE = "evidence/README.md"  # the summary page, as the repository's README links it


def readme_block(folders: list[Path], root: Path, view: str = "tier") -> str:
    """The verdict block of the evidence ``folders`` (from each one's tables/claims.csv) for a page of
    :data:`VIEWS`, with the command that regenerates it: ``tier`` one folder's full table; ``summary``
    every folder side by side (:func:`family_summary`); ``front`` (the repository's README) the family
    table alone (:func:`family_table`), ending with a link to :data:`EVIDENCE_PAGE`."""
    if view not in VIEWS:
        raise ValueError(f"unknown README view {view!r}; expected one of {sorted(VIEWS)}")
    out = ["<!-- generated by `.venv/bin/python -m initmem reanalyse`: edit the claims, not this table -->\n"]
    tables = {f.name: pd.read_csv(f / "tables" / "claims.csv", keep_default_na=False, na_values=[""]) for f in folders}
    if view == "front":
        return "\n".join(out + [family_table(tables),
                                 "Rows per claim family after Holm (a finding several rows read counts in each). Every decided row and "
                                 f"finding, and each tier's counts (a finding once): [{EVIDENCE_PAGE}]({EVIDENCE_PAGE}).\n"]).rstrip() + "\n"
    if view == "summary":
        return "\n".join(out + [family_summary(tables),
                                 "Every row, with its interval, regime and the seeds that would decide it: each folder's README "
                                 "and `tables/claims.md`.\n"]).rstrip() + "\n"
    for f in folders:
        out += [f"Verdicts of `{f.resolve().relative_to(root.resolve())}` (`tables/claims.md`):\n", verdict_table(tables[f.name]),
                what_size_decides(tables[f.name])]
        if (f / "tables" / "runs.csv").is_file():
            out.append("### " + section(pd.read_csv(f / "tables" / "runs.csv")).removeprefix("## "))
    return "\n".join(out).rstrip() + "\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the :data:`BEGIN` and :data:`END` lines replaced by ``block``."""
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"no {BEGIN} ... {END} block to fill")
    return text[: start + len(BEGIN)] + "\n" + block + text[stop:]
