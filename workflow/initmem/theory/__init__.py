"""The forgetting-time view's theory, apart from training: deep linear networks (Figure 9's sanity
check) and the clock calculator. Imports :mod:`initmem.engine.clocks`, :mod:`initmem.spec`,
:mod:`initmem.paper` (the paper's numbers) and :mod:`initmem.io` only.
"""
