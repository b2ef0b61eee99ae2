"""The planner: what a config would decide before anything trains, and how well the rules decide.

design (per claim of a config: the configurations it reads, the assumed truth, P(decision) and the
compute; the cheapest design), design_check (the planner against what the committed tiers realised),
calibration and collapse_calibration (the rules' error rates on simulated truths), familywise (the
chance of any false verdict over a table's rows). Stands above the verdict path (:mod:`initmem.claims`),
whose claims it plans and whose rules it simulates; nothing below imports it.
"""
