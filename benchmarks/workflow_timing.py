"""Wall-clock of the workflow on this machine: the paper-scale dry run, and the embedded default end to end.

usage: python benchmarks/workflow_timing.py [--archive PATH --no-verify-md5] [--skip-default]
Runs in a temporary copy of the workflow (results of the repository are untouched) and prints a
Markdown table (committed output: benchmarks/workflow_timing.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--archive")
    parser.add_argument("--no-verify-md5", action="store_true")
    parser.add_argument("--skip-default", action="store_true")
    args = parser.parse_args()
    snakemake = [sys.executable, "-m", "snakemake"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("Snakefile", "workflow", "config", "envs", "profiles"):
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
        rows.append(("snakemake -n --configfile config/paper.yaml (8,200 runs)",
                     timed([*snakemake, "-n", "--configfile", "config/paper.yaml"], work)))
        rows.append(("snakemake -n figures/fig6.pdf --configfile config/paper.yaml",
                     timed([*snakemake, "-n", "figures/fig6.pdf", "--configfile", "config/paper.yaml"], work)))
        if not args.skip_default:
            extra = []
            if args.archive:
                (work / "local.yaml").write_text(
                    f"data:\n  source: archive\n  archive: {os.path.abspath(args.archive)}\n  verify_md5: {str(not args.no_verify_md5).lower()}\n")
                extra = ["--configfile", "local.yaml"]
            rows.append(("snakemake --cores 2 (embedded default, every figure)", timed([*snakemake, "--cores", "2", *extra], work)))
    print(f"# Workflow timing ({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()})\n")
    print("| command | wall seconds |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| `{name}` | {seconds:.1f} |")


if __name__ == "__main__":
    main()
