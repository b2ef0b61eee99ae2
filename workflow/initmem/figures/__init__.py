"""The figures: style (fonts, dpi), common (footnotes, log panels, saving), paper (Figures 1-8),
linear (Figure 9), clock (Figure 10), registry (a name of :data:`initmem.pipeline.targets.FIGURES` -> its figure). Figures read the
tables of :mod:`initmem.claims`, the theory and that list; nothing below imports a figure.
"""
