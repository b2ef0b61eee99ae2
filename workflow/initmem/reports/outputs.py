"""The analysis tables of a set of runs, and how they are written: what the workflow's ``tables`` rule
(:func:`initmem.scriptjobs.write_tables`) and ``reanalyse`` (:mod:`initmem.evidence`) both write."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from initmem.io import write_bytes


def analysis_tables(runs: pd.DataFrame, history: pd.DataFrame) -> dict[str, pd.DataFrame | str]:
    """spreads.csv, beta.csv, claims.csv, claims.md and paper_tables.md (file name -> table or text)
    from the runs and history: what the workflow's ``tables`` rule and ``reanalyse`` both write."""
    from initmem.claims.analysis import beta_table, spreads
    from initmem.claims.similarity import section
    from initmem.claims.table import claims
    from initmem.reports.paper_tables import paper_tables
    from initmem.reports.verdict_tables import claims_markdown

    spread_table, claim_table = spreads(runs), claims(runs, history)
    return {"spreads.csv": spread_table, "beta.csv": beta_table(history), "claims.csv": claim_table,
            "claims.md": claims_markdown(claim_table) + "\n" + section(runs), "paper_tables.md": paper_tables(runs, spread_table)}


# Analysis tables are written to 10 significant digits: their last digits otherwise follow the machine's BLAS and
# thread count (a re-analysis on another machine would move committed bytes), and no statistic here means more.
ANALYSIS_FLOAT = "%.10g"


def write_table(content: pd.DataFrame | str, path: Path, float_format: str | None = None) -> bool:
    """One table (CSV, gzipped for a .gz path, with no timestamp in it; floats as ``float_format``, full
    precision by default) or text, atomically, only when it changed; True when it changed."""
    import gzip

    data = content.encode() if isinstance(content, str) else content.to_csv(index=False, float_format=float_format).encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    return write_bytes(data, path)
