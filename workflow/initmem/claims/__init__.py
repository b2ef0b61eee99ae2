"""From metrics records to the paper's tables and verdicts.

analysis (runs, history, spreads, OLS |beta(t)|), cells (a configuration's runs as a cell), claim
(the claim type and the regime rule), catalogue (every claim, one file per family: sentence, section,
side, regime, the rows it makes), rows (a claim's row: the decision, then its columns), table
(claims.csv), clock (the clock-matched cells), report (claims.md and the READMEs' summaries),
paper_tables (the paper's tables at this scale), similarity (the design's dimensionless numbers beside
the paper's), calibration, collapse_calibration and familywise (the rules' measured error rates).
Reads records through :mod:`initmem.pipeline.records`; the statistics come from :mod:`initmem.stats`;
imports the engine's clocks, never figures.
"""
