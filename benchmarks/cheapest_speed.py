"""What `design --cheapest --write-config` costs: the command run as it is typed, its CPU seconds (user + system:
the measure that holds on a loaded machine, where wall time does not), its wall time and the load it ran under.
The goal: at most 120 CPU seconds for config/paper.yaml.

    PYTHONPATH=workflow .venv/bin/python benchmarks/cheapest_speed.py > benchmarks/cheapest_speed.md
    PYTHONPATH=workflow .venv/bin/python benchmarks/cheapest_speed.py config/evidence-decisive.yaml   # a quick look
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_CPU_S = 120.0


def measured(config: str, written: Path) -> dict:
    """CPU seconds (user, system), wall seconds, the load before, and the last stderr line of one run of the command."""
    command = [sys.executable, "-m", "initmem", "design", config, "--cheapest", "--write-config", str(written)]
    load = os.getloadavg()[0]
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")})
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    wrote = next(line for line in done.stderr.splitlines() if line.startswith("wrote "))
    return {"user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime, "wall": wall, "load": load,
            "wrote": wrote.replace(str(written), "FILE"), "families": [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]}


def markdown(config: str, m: dict) -> str:
    """The committed table: the command, its CPU and wall time, the load, and what it wrote."""
    cpu = m["user"] + m["sys"]
    lines = [f"<!-- generated: PYTHONPATH=workflow .venv/bin/python benchmarks/cheapest_speed.py {config} > benchmarks/cheapest_speed.md "
             f"({date.today().isoformat()}, {os.cpu_count()} cores) -->", "",
             f"# `design {config} --cheapest --write-config FILE`: what it costs", "",
             "| CPU seconds (user + system) | user | system | wall seconds | load average (1 min) before | goal |", "|---|---|---|---|---|---|",
             f"| {cpu:.0f} | {m['user']:.0f} | {m['sys']:.0f} | {m['wall']:.0f} | {m['load']:.1f} | <= {GOAL_CPU_S:.0f} CPU seconds: "
             f"{'met' if cpu <= GOAL_CPU_S else 'not met'} |", "", "What it wrote (its last lines on stderr, FILE for the file's name):", "",
             f"    {m['wrote']}", *[f"      {line}" for line in m["families"]]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default="config/paper.yaml")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sys.stdout.write(markdown(args.config, measured(args.config, Path(tmp) / "cheap.yaml")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
