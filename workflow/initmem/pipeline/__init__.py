"""The workflow's bookkeeping (torch-free except :mod:`jobs`): what Snakemake runs and when.

grid (studies -> run specs), planning (binding pack plans), targets (what each figure needs,
resources), rates (throughput model for pack sizes and `estimate`), identity (run keys: what makes
a run retrain), records (metrics files on disk), configfiles and guards (config layering and checks
of the invocation), invocation (the parse-time checks and notes in one call, provenance after the
jobs ran), estimate (the paper's cost), legacy (moving an older checkout's data), jobs (one training job = one pack).
Imports the engine, :mod:`initmem.spec`, :mod:`initmem.paper` and :mod:`initmem.io`; never claims or figures.
"""
