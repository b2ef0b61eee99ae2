"""The paper dry run beside Snakemake's own cost: the same dry run of a toy Snakefile with the same
jobs (rules, counts, wildcards, inputs and dependencies), whose rules compute nothing.

usage: PYTHONPATH=workflow python benchmarks/dry_run_vs_toy.py [--repeat N] [--target figures/fig6.pdf]
Runs in temporary copies (the repository's results are untouched), each command ``--repeat`` times
(the fastest counts), and prints a Markdown table (committed output: benchmarks/dry_run_vs_toy.md):
CPU seconds (user + system of the Snakemake process) and wall seconds, the toy's and the ratio.
The toy's shape comes from the library's own planning of config/paper.yaml, so both plan the same
job counts (checked: the script stops if they differ).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("Snakefile", "workflow", "config", "envs", "profiles", "slurm")

# The toy: the real workflow's rules, directives and dependency shape for one figure's studies
# (plans -> packs -> run files -> per-study tables -> the figure), reading its shape from shape.json.
TOY = '''
import json
SHAPE = json.load(open("shape.json"))  # {study: {pack: [run ids]}}
PACK_OF = {(s, r): p for s, packs in SHAPE.items() for p, runs in packs.items() for r in runs}

localrules: plan_pack, run_metrics, collect_study, figure, prepare_data

rule figure:
    input: [f"tables/{s}.{k}" for s in SHAPE for k in ("runs.csv", "history.csv.gz")]
    output: pdf="figures/FIG.pdf", png="figures/FIG.png"
    params: analysis="v1"
    log: "logs/figure.log"
    shell: "touch {output}"

rule collect_study:
    input: lambda w: [f"runs/{w.study}/{r}.json" for runs in SHAPE[w.study].values() for r in runs]
    output: runs="tables/{study}.runs.csv", history="tables/{study}.history.csv.gz"
    params: analysis="v1"
    log: "logs/collect/{study}.log"
    shell: "touch {output}"

rule run_metrics:
    input:
        pack=ancient(lambda w: f"packs/{w.study}/{PACK_OF[(w.study, w.run_id)]}.json"),
        plan=lambda w: f"plans/{w.study}/{PACK_OF[(w.study, w.run_id)]}.json",
    output: "runs/{study}/{run_id}.json"
    params: key=lambda w: w.run_id
    log: "logs/runs/{study}/{run_id}.log"
    shell: "touch {output}"

rule train:
    input: plan="plans/{study}/{pack}.json", data=ancient("data/cifar10.npz")
    output: pack="packs/{study}/{pack}.json"
    priority: 10
    threads: 1
    resources: gpu=1, runtime=lambda w: 60, mem_mb=lambda w: 8000
    log: "logs/train/{study}/{pack}.log"
    shell: "touch {output}"

rule plan_pack:
    output: "plans/{study}/{pack}.json"
    params: members=lambda w: SHAPE[w.study][w.pack]
    log: "logs/plans/{study}/{pack}.log"
    run:
        open(output[0], "w").write(json.dumps(params.members))

rule prepare_data:
    output: "data/cifar10.npz"
    priority: 100
    log: "logs/prepare_data.log"
    shell: "touch {output}"
'''


def fig_shape(target: str) -> dict:
    """{study: {pack: [run ids]}} of the studies ``target`` (a figure) reads, planned from scratch."""
    sys.path.insert(0, str(ROOT / "workflow"))
    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.grid import expand_studies
    from initmem.pipeline.planning import plan_studies
    from initmem.pipeline.targets import figure_studies

    config = load_config([str(ROOT / "config/paper.yaml")], {}, default=ROOT / "config/config.yaml", schema=ROOT / "config/schema.yaml")
    planned = plan_studies(config, expand_studies(config))
    studies = figure_studies(Path(target).stem, list(planned))
    return {s: {name: [run_id for run_id, _ in pack.members] for name, pack in planned[s][0].items()} for s in studies}


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """CPU seconds (user + system) and wall seconds of one command, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return cpu, wall, proc.stdout + proc.stderr


def job_counts(output: str) -> dict[str, int]:
    table = output[output.index("Job stats:"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def best(cmd: list[str], cwd: Path, repeat: int) -> tuple[float, float, dict]:
    runs = [timed(cmd, cwd) for _ in range(repeat)]
    cpu, wall, out = min(runs, key=lambda r: r[0])
    return cpu, wall, job_counts(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--target", default="figures/fig6.pdf")
    args = parser.parse_args()
    snakemake = [sys.executable, "-m", "snakemake"]
    fig = Path(args.target).stem
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        real, toy = Path(tmp, "real"), Path(tmp, "toy")
        for folder in (real, toy):
            folder.mkdir()
            for name in COPIED:
                src = ROOT / name
                (shutil.copytree if src.is_dir() else shutil.copy)(src, folder / name)
            # the profile's account placeholder is refused at parse time; any account name will do for a dry run
            profile = folder / "slurm/config.yaml"
            profile.write_text(profile.read_text().replace('"CHANGE_ME"', '"benchmark"'))
        (toy / "Snakefile").write_text(TOY.replace("FIG", fig))
        (toy / "shape.json").write_text(json.dumps(fig_shape(args.target)))
        commands = {
            f"snakemake {args.target} -n --quiet rules --configfile config/paper.yaml":
                [args.target, "-n", "--quiet", "rules", "--configfile", "config/paper.yaml"],
            f"snakemake --profile slurm {args.target} -n --quiet rules": ["--profile", "slurm", args.target, "-n", "--quiet", "rules"],
        }
        for name, cmd in commands.items():
            cpu, wall, counts = best([*snakemake, *cmd], real, args.repeat)
            toy_cpu, toy_wall, toy_counts = best([*snakemake, *[c.replace(args.target, f"figures/{fig}.pdf") for c in cmd]], toy, args.repeat)
            if counts != toy_counts:
                raise SystemExit(f"the toy plans other jobs: {toy_counts} vs {counts}")
            rows.append((name, counts["total"], cpu, wall, toy_cpu, toy_wall))
    load = os.getloadavg()
    print(f"# Paper dry run vs a toy DAG of the same shape ({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()})\n")
    print(f"`{' '.join(['python', 'benchmarks/dry_run_vs_toy.py', *sys.argv[1:]])}`: fastest of {args.repeat} runs each; "
          f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min).\n")
    print("| command | jobs | CPU s | wall s | toy CPU s | toy wall s | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, jobs, cpu, wall, toy_cpu, toy_wall in rows:
        print(f"| `{name}` | {jobs:,} | {cpu:.1f} | {wall:.1f} | {toy_cpu:.1f} | {toy_wall:.1f} | {cpu / toy_cpu:.2f}x |")


if __name__ == "__main__":
    main()
