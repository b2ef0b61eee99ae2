"""Make ``initmem`` importable from a Snakemake script without installing it (the scripts dir is on sys.path)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
