"""How every figure is written, for print and screen: importing this module sets it for matplotlib.

PDFs embed TrueType (Type 42) fonts, not Type 3 (which many venues reject); PNGs are written at
:data:`PNG_DPI`. Every figure module (initmem.figures.paper, clock, linear) and the figure scripts import it.
"""

from __future__ import annotations

import matplotlib

PNG_DPI = 200

matplotlib.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42, "savefig.dpi": PNG_DPI})
