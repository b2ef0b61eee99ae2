"""One phenomenon counted once: rows that read the same runs are one finding (initmem.reports.verdict_tables)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from initmem.claims.rows import runs_read
from initmem.reports import verdict_tables as R
from initmem.stats.verdicts import Cell


def _row(cid: str, verdict: str, runs: str = "", **extra) -> dict:
    return dict(id=cid, kind="direction", quantity=f"claim {cid}", verdict=verdict, statistic_verdict=verdict, verdict_holm=verdict,
                reproduced=1.0, ci_low=0.5, ci_high=1.5, paper_side="> 0", n_runs=64, runs_read=runs) | extra


def test_a_row_names_the_runs_it_reads_whatever_the_cell():
    """The same run ids from a run cell and a curve cell give the same digest; other runs another; no cell none."""
    a = Cell("r1|r2|r3", np.array([0.1]), np.array([0]), np.zeros((1, 1)))
    curve = Cell("r3|r1|r2", np.array([0.1]), np.array([0]), np.zeros((2, 1, 1)))
    assert runs_read([a]) == runs_read([curve]) != runs_read([Cell("r1|r2", np.array([0.1]), np.array([0]), np.zeros((1, 1)))])
    assert runs_read([a]).startswith("runs:") and runs_read([]) == ""
    assert runs_read([a, Cell("r4", np.array([0.1]), np.array([0]), np.zeros((1, 1)))]) != runs_read([a])


def test_rows_on_the_same_runs_count_as_one_finding():
    """The spread, the flat |beta| range and its level of one SGD configuration (the same 64 runs) are one
    finding: 3 rows, counted once; a contrast on other runs counts on its own."""
    table = pd.DataFrame([_row("sgd_keeps_spread_b16", "reproduced", "runs:aa"), _row("beta_flat_sgd_b16", "reproduced", "runs:aa"),
                          _row("beta_level_sgd_b16", "reproduced", "runs:aa"), _row("sgd_gt_adam_b16", "not reproduced", "runs:bb"),
                          _row("l2_below_1pp", "not measured")])
    line = R.counts_line(table)
    assert line.startswith("4 directional claims measured, 2 findings (rows that read the same runs count once), familywise after Holm: "
                           "1 reproduced, 1 not reproduced, 0 inconclusive; 1 more not measured")
    shared = R.shared_findings("regime", table)
    assert shared == ["- `regime`: 3 rows, 1 finding (the same 64 runs): **reproduced**; its rows: `sgd_keeps_spread_b16` (reproduced), "
                      "`beta_flat_sgd_b16` (reproduced), `beta_level_sgd_b16` (reproduced)"]
    decided = R.decided_lines("regime", table)
    assert len(decided) == 2 and decided[0].startswith("- `regime`: one finding read by 3 rows on the same runs: **reproduced**")


def test_a_finding_whose_rows_disagree_says_so_and_rows_without_runs_stay_rows():
    table = pd.DataFrame([_row("a", "reproduced", "runs:aa"), _row("b", "inconclusive", "runs:aa"), _row("c", "reproduced"),
                          _row("d", "reproduced")])
    assert "3 findings" in R.counts_line(table) and "1 reproduced" not in R.counts_line(table)
    assert "2 reproduced, 0 not reproduced, 0 inconclusive, 1 whose rows disagree" in R.counts_line(table)
    old = pd.DataFrame([_row("a", "reproduced"), _row("b", "reproduced")]).drop(columns="runs_read")  # a table made before the column
    assert R.counts_line(old).startswith("2 directional claims measured, familywise after Holm: 2 reproduced")
