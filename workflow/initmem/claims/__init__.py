"""The verdict path: from metrics records to each claim of the paper decided.

analysis (runs, history, spreads, OLS |beta(t)|), cells (a configuration's runs as a cell), claim
(the claim type and the regime rule), catalogue (every claim, one file per family: sentence, section,
side, regime, the rows it makes), rows (a claim's row: the decision, then its columns), clock (the
clock-matched cells), similarity (the design's dimensionless numbers and the selected predictors'
counts, which the regime rule reads) and table (claims.csv: every row, the seeds that would decide the
undecided ones, Holm's step-down). Reads records through :mod:`initmem.pipeline.records`; the
statistics come from :mod:`initmem.stats`; imports the engine's clocks, never the planner
(:mod:`initmem.planner`), the reports (:mod:`initmem.reports`) or figures.
"""
