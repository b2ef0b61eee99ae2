"""The statistics behind the verdicts: pure numpy/scipy/statsmodels functions of cells of runs, with
no claim ids and no file I/O.

verdicts (cells, sides, intervals, tests, verdict words), spreads (the sigma_w spread and its
interval), shapes (|beta(t)| curves and their shape statistics), power (the chance a design decides),
multiplicity (Holm across a table's decisions), collapse (the timescale collapse and its decision).
Imports only each other; the claims (:mod:`initmem.claims`) and the planner read them.
"""
