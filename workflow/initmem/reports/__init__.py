"""The reports: the analysis tables of a set of runs as they are written.

outputs (every analysis table of a set of runs, and how a table is written), verdict_tables (claims.md
and the READMEs' verdict blocks), paper_tables (the paper's tables at this scale). Stands above the
verdict path (:mod:`initmem.claims`) and beside the planner; nothing below imports it.
"""
