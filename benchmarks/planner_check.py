"""The planner checked against what happened: each committed tier replanned without itself, every spread
and contrast plan's P(decision) beside the rate its rule reaches on resamples of that tier's own seeds
(:mod:`initmem.planner.design_check`). Writes the table (Markdown, stdout) and the CSV ``design`` reads its
warnings from.

    PYTHONPATH=workflow .venv/bin/python benchmarks/planner_check.py > benchmarks/planner_check.md
    PYTHONPATH=workflow .venv/bin/python benchmarks/planner_check.py --draws 200 --csv /tmp/check.csv   # a quick look
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from initmem.planner import design as D
from initmem.planner import design_check as K


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=K.DRAWS, help=f"resamples of a tier's seeds per row (default {K.DRAWS})")
    parser.add_argument("--csv", type=Path, default=D.CHECKS, help="where the table's CSV goes (default: the one design reads)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    checks = [c for tier, config in K.TIERS.items() for c in K.tier_checks(tier, config, args.draws)]
    K.as_frame(checks).to_csv(args.csv, index=False, float_format="%.6g")
    command = "PYTHONPATH=workflow .venv/bin/python benchmarks/planner_check.py" + ("" if args.draws == K.DRAWS else f" --draws {args.draws}")
    sys.stdout.write(K.markdown(checks, command + " > benchmarks/planner_check.md", time.perf_counter() - start,
                                 args.draws))
    return 0


if __name__ == "__main__":
    sys.exit(main())
