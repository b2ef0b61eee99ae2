"""From metrics records to the paper's tables and verdicts.

analysis (runs, history, spreads, OLS |beta(t)|), verdicts (intervals, shape statistics, verdict
words), registry (every claim: the paper's sentence, statistic, regime), rows (a claim's cells and
row), table (claims.csv), clock (the clock-matched claims), report (claims.md and the READMEs'
summaries), paper_tables (the paper's tables at this scale). Reads records through
:mod:`initmem.pipeline.records`; imports the engine's clocks, never figures.
"""
