"""``python -m initmem estimate``: GPU-hours of a config's studies as a low-central-high range, from
the packs as planned and each pack's rate (:mod:`initmem.costs.rates`), with the rates' source,
and the checkpoint disk the Slurm profile's peak concurrency needs."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from initmem import paths
from initmem.costs.checkpoints import SAVE_MIB_PER_S, UNWARNED_STOP_DAYS, campaign_cost, save_seconds, young_minutes
from initmem.costs.levers import levers, levers_lines
from initmem.costs.rates import DEFAULTS_SOURCE, RateModel, family, load_rates
from initmem.costs.versions import table_gpu, version_lines
from initmem.pipeline.grid import Run, expand_studies
from initmem.pipeline.planning import new_pack_size, plan_studies
from initmem.pipeline.targets import pack_rate, pack_runtime_minutes, pack_state_mb, run_images, training_minutes_per_attempt

PROFILE = paths.ROOT / "slurm" / "config.yaml"  # the Slurm profile of the repository
# A training job's checkpoint files: the checkpoint and its previous copy (``.prev``) between saves,
# and during a save also the new one being written beside them.
CHECKPOINT_COPIES = {"between saves": 2, "while saving": 3}


def profile_jobs(path: str | Path = PROFILE) -> int:
    """The ``jobs`` limit of a Snakemake profile (at most this many jobs queued or running at once)."""
    import yaml

    jobs = (yaml.safe_load(Path(path).read_text()) or {}).get("jobs")
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"{path}: jobs = {jobs!r}; a profile's jobs limit must be a whole number >= 1")
    return jobs


def cluster_config(config: dict, profile: str | Path = PROFILE) -> dict:
    """``config`` with each job capped at the Slurm profile's partition time limit, as on the cluster
    (what ``estimate`` and ``design`` price; unchanged without a profile file)."""
    import yaml

    from initmem.costs.timelimit import capped_compute, profile_time_limit

    if not Path(profile).is_file():
        return config
    limit = profile_time_limit(yaml.safe_load(Path(profile).read_text()) or {})
    return {**config, "compute": capped_compute(config["compute"], limit)}


def _all_packs(config: dict) -> list[list[dict]]:
    """The specs of every pack ``config`` plans from scratch, one list per pack."""
    return [[spec for _, spec in pack.members] for packs, _ in plan_studies(config, expand_studies(config)).values()
            for pack in packs.values()]


def packs_checkpoint_disk(packs: Iterable[list[dict]], jobs: int) -> dict:
    """Checkpoint disk (TiB) of ``packs`` (each a list of specs) with ``jobs`` training jobs at
    once, the largest running: one copy of each pack's state (model + optimizer state, float32: the
    file's size, ``benchmarks/checkpoint_memory.md``), and :data:`CHECKPOINT_COPIES` of them."""
    sizes = sorted((pack_state_mb(specs) for specs in packs), reverse=True)
    one = sum(sizes[:jobs]) / 2**20
    return {"jobs": min(jobs, len(sizes)), "one copy": one, "largest MiB": sizes[0] if sizes else 0.0,
            **{when: one * n for when, n in CHECKPOINT_COPIES.items()}}


def checkpoint_disk(config: dict, jobs: int) -> dict:
    """:func:`packs_checkpoint_disk` of every pack ``config`` plans from scratch."""
    return packs_checkpoint_disk(_all_packs(config), jobs)


def packs_gpu_hours(packs: Iterable[list[dict]], compute: dict) -> tuple[tuple[float, float, float], set[str]]:
    """GPU-hours (low, central, high) of ``packs`` (each a list of specs) at each pack's
    :func:`pack_rate`, and the rates' sources."""
    hours, sources = [0.0, 0.0, 0.0], set()
    for specs in packs:
        rate, images = pack_rate(specs, compute), sum(run_images(s) for s in specs)
        for i, r in enumerate((rate.high, rate.central, rate.low)):  # a high rate is a low cost
            hours[i] += images / r / 3600
        sources.add(rate.source)
    return (hours[0], hours[1], hours[2]), sources


def pack_gpu_hours(config: dict) -> dict[str, dict]:
    """Per study of ``config``: runs, jobs (packs as planned from scratch) and GPU-hours (low,
    central, high) at each pack's :func:`pack_rate`, the rates' sources, and the central hours per
    rate kind (``by_kind``: (arch, batch size, optimizer family, precision) -> {source: hours}). An
    upper bound where runs stop early (ResNet-56/110)."""
    out = {}
    precision = config["compute"]["precision"]
    for study, (packs, _) in plan_studies(config, expand_studies(config)).items():
        specs = [[spec for _, spec in pack.members] for pack in packs.values()]
        hours, sources = packs_gpu_hours(specs, config["compute"])
        by_kind = {}
        for pack in specs:
            rate, images = pack_rate(pack, config["compute"]), sum(run_images(s) for s in pack)
            kind = (pack[0]["arch"], int(pack[0]["batch_size"]), family(pack[0]["optimizer"]), precision)
            by_kind.setdefault(kind, Counter())[rate.source] += images / rate.central / 3600
        out[study] = {"runs": sum(len(s) for s in specs), "jobs": len(packs), "hours": hours, "sources": sources, "by_kind": by_kind}
    return out


def config_gpu_hours(config: dict) -> tuple[float, float, float]:
    """GPU-hours (low, central, high) of every run of ``config``, packed as planned from scratch:
    ``estimate``'s ``all`` row and ``design``'s whole config."""
    lo, mid, hi = _totals(pack_gpu_hours(config))
    return lo, mid, hi


def configuration_gpu_hours(spec: dict, runs: int, config: dict) -> tuple[float, float, float]:
    """GPU-hours (low, central, high) of ``runs`` runs of one configuration (``spec``; they differ
    only in sigma_w and seed), packed as the workflow packs a configuration's new runs: the price
    ``design`` gives a claim's configurations at any number of seeds and sigma_w values."""
    return _configuration_hours(json.dumps(spec, sort_keys=True), runs, json.dumps(config["pack"], sort_keys=True),
                                json.dumps(config["compute"], sort_keys=True))


@functools.lru_cache(maxsize=4096)
def _configuration_hours(spec: str, runs: int, pack: str, compute: str) -> tuple[float, float, float]:
    """:func:`configuration_gpu_hours` of its arguments as JSON (cached: ``design --cheapest`` asks often)."""
    base, compute_cfg = json.loads(spec), json.loads(compute)
    members = [Run("design", f"run{i}", "design", {**base, "seed": i}) for i in range(runs)]
    size = max(1, new_pack_size(members, json.loads(pack), compute_cfg))
    packs = [[r.spec for r in members[i:i + size]] for i in range(0, runs, size)]
    return packs_gpu_hours(packs, compute_cfg)[0]


def rate_coverage(rows: dict[str, dict]) -> str:
    """One line: which planned central GPU-hours rest on measured rates and which on the stated
    defaults (with the kinds of job that have no measured row, most hours first)."""
    measured, defaults, other = 0.0, Counter(), 0.0
    for row in rows.values():
        for kind, per_source in row["by_kind"].items():
            for source, hours in per_source.items():
                if source.startswith("measured"):
                    measured += hours
                elif source == DEFAULTS_SOURCE:
                    defaults[kind] += hours
                else:
                    other += hours
    total = measured + sum(defaults.values()) + other
    if other and not measured and not defaults:
        return "rates: every job at the assumed flat rate (compute.images_per_second)"
    if not measured:
        return f"rates: all {total:,.0f} central GPU-hours rest on the stated defaults (no compute.rate_table measured on a GPU)"
    line = f"rates: measured rows carry {measured:,.0f} of {total:,.0f} central GPU-hours, the stated defaults {sum(defaults.values()):,.0f}"
    if defaults:
        kinds = [f"{ARCH_NAMES[a]} b{b} {f} {p} {h:,.0f} h" for (a, b, f, p), h in defaults.most_common()]
        line += " (no measured row: " + ", ".join(kinds[:8]) + (f", and {len(kinds) - 8} more" if len(kinds) > 8 else "") + ")"
    return line


def planned_shapes(config: dict) -> list[dict]:
    """The job shapes ``config`` plans (from scratch): one per (arch, width, batch size, optimizer
    family, pack size) with ``jobs`` (how many packs have it), ``hours`` (their central GPU-hours),
    ``optimizer`` (the family's member with the most GPU-hours in that shape) and ``precision``;
    most GPU-hours first. What the device check measures, so its rates are the ones planning reads."""
    shapes: dict[tuple, dict] = {}
    for packs, _ in plan_studies(config, expand_studies(config)).values():
        for pack in packs.values():
            specs = [spec for _, spec in pack.members]
            s = specs[0]
            key = (s["arch"], int(s["width"]), int(s["batch_size"]), family(s["optimizer"]), len(specs))
            hours = sum(run_images(x) for x in specs) / pack_rate(specs, config["compute"]).central / 3600
            row = shapes.setdefault(key, {"jobs": 0, "hours": 0.0, "by_optimizer": Counter()})
            row["jobs"] += 1
            row["hours"] += hours
            row["by_optimizer"][s["optimizer"]] += hours
    out = [{"arch": k[0], "width": k[1], "batch_size": k[2], "family": k[3], "pack": k[4],
            "optimizer": v["by_optimizer"].most_common(1)[0][0], "precision": config["compute"]["precision"],
            "jobs": v["jobs"], "hours": round(v["hours"], 1)} for k, v in shapes.items()]
    return sorted(out, key=lambda r: (-r["hours"], r["arch"], r["batch_size"], r["family"], r["pack"]))


ARCH_NAMES = {"resnet9": "ResNet-9", "resnet56": "ResNet-56", "resnet110": "ResNet-110"}


def planned_packs_markdown(config: dict) -> str:
    """The packs ``config`` plans from scratch, per architecture and batch size: how many jobs of
    each pack size, and the attempts of ``compute.max_runtime_minutes`` they need (docs/packs.md's
    generated block)."""
    compute = config["compute"]
    cap = compute.get("max_runtime_minutes")
    cells: dict[tuple, Counter] = {}
    attempts: dict[tuple, set] = {}
    for packs, _ in plan_studies(config, expand_studies(config)).values():
        for pack in packs.values():
            specs = [spec for _, spec in pack.members]
            key = (specs[0]["arch"], int(specs[0]["batch_size"]))
            cells.setdefault(key, Counter())[len(specs)] += 1
            if cap:
                minutes = pack_runtime_minutes(specs, pack_rate(specs, compute).central)
                per_attempt = training_minutes_per_attempt(specs, compute, cap, "compute")  # cap, less compiling
                attempts.setdefault(key, set()).add(-(-minutes // per_attempt))
    order = sorted(cells, key=lambda k: (list(ARCH_NAMES).index(k[0]), k[1]))
    lines = ["| architecture | batch | jobs | pack sizes (jobs) | attempts |", "|---|---:|---:|---|---|"]
    for key in order:
        sizes = ", ".join(f"{n} ({c})" for n, c in sorted(cells[key].items(), key=lambda nc: (-nc[1], -nc[0])))
        tries = "-".join(str(a) for a in sorted(attempts.get(key, {1}))) if cap else ""
        lines.append(f"| {ARCH_NAMES[key[0]]} | {key[1]} | {sum(cells[key].values())} | {sizes} | {tries} |")
    total = sum(sum(c.values()) for c in cells.values())
    lines.append(f"| all | | {total} | | |")
    rate = "the stated default rates" if compute.get("rate_table") is None and compute.get("images_per_second") is None \
        else "the configured rates"
    head = (f"{total} training jobs with {rate} in {compute['precision']}, `pack.max_models: {config['pack']['max_models']}`, "
            f"`pack.max_images: {config['pack']['max_images']}`" + (f", attempts of {cap} minutes" if cap else "") + ":")
    return head + "\n\n" + "\n".join(lines) + "\n"


def _totals(rows: dict[str, dict]) -> list[float]:
    """GPU-hours (low, central, high) of every study together."""
    return [sum(r["hours"][i] for r in rows.values()) for i in range(3)]


def estimate_table(config: dict, jobs: int | None = None) -> str:
    """``python -m initmem estimate``: a markdown table of GPU-hours per study as a low-central-high
    range, the source of its rates, for the rate model the central total in each precision, with
    ``jobs`` (the profile's peak concurrency) the checkpoint disk it needs, the versions a measured
    rate table was measured with (:func:`initmem.costs.versions.version_lines`), and the central
    figure in the chosen precision with the levers it assumes (:mod:`initmem.costs.levers`)."""
    rows = pack_gpu_hours(config)
    compute = config["compute"]
    lines = [f"| study | runs | jobs | GPU-hours low | central | high |  ({compute['precision']})", "|---|---:|---:|---:|---:|---:|"]
    for study, row in rows.items():
        lo, mid, hi = row["hours"]
        lines.append(f"| {study} | {row['runs']:,} | {row['jobs']:,} | {lo:,.0f} | {mid:,.0f} | {hi:,.0f} |")
    total = _totals(rows)
    lines.append(f"| all | {sum(r['runs'] for r in rows.values()):,} | {sum(r['jobs'] for r in rows.values()):,} | "
                 f"{total[0]:,.0f} | {total[1]:,.0f} | {total[2]:,.0f} |")
    lines.append("source: " + "; ".join(sorted(set().union(*(r["sources"] for r in rows.values())))))
    lines.append(rate_coverage(rows))
    others = {}
    if compute.get("images_per_second") is None:
        others = {p: _totals(pack_gpu_hours({**config, "compute": {**compute, "precision": p}}))[1]
                  for p in ("float32", "tf32", "bf16") if p != compute["precision"]}
        lines.append("central in other precisions (packs re-planned): " + ", ".join(f"{p} {h:,.0f} h" for p, h in others.items()))
    lines.append("Upper bound where runs stop early (ResNet-56/110, patience 30); one job per GPU at a time.")
    model = load_rates(compute.get("rate_table"), compute.get("compile", False)) if compute.get("images_per_second") is None \
        else RateModel()
    lines += version_lines(model)
    gpu = table_gpu(model)
    lines += levers_lines(total[1], compute["precision"], gpu, levers(config, rows, others, gpu))
    packs = _all_packs(config)
    lines.append(checkpoint_line(config, packs))
    if jobs is not None:
        lines.append(_disk_line(packs_checkpoint_disk(packs, jobs)))
    return "\n".join(lines)


def checkpoint_line(config: dict, packs: list[list[dict]] | None = None) -> str:
    """What the config's periodic checkpoints cost (:mod:`initmem.costs.checkpoints`): the saves' GPU-hours and
    TiB at ``checkpoint.every_minutes``, the expected loss to unwarned stops, and Young's interval for the largest
    pack beside them. ``packs``: every pack's specs as :func:`_all_packs` plans them (planned here when not given)."""
    every = float(config["checkpoint"].get("every_minutes") or 0)
    costed = [(sum(run_images(s) for s in specs) / pack_rate(specs, config["compute"]).central / 3600, pack_state_mb(specs))
             for specs in (_all_packs(config) if packs is None else packs)]
    if not costed:
        return "checkpoints: no training job"
    total, largest = sum(h for h, _ in costed), max(mib for _, mib in costed)
    now, best = campaign_cost(costed, every), young_minutes(save_seconds(largest))
    at_best = campaign_cost(costed, best)
    return (f"checkpoints every {every:g} min (`checkpoint.every_minutes`): saves {now['save hours']:,.0f} GPU-h "
            f"({now['save hours'] / total:.1%} of {total:,.0f} central), {now['TiB written']:,.1f} TiB written; an unwarned stop "
            f"(node failure) per job every {UNWARNED_STOP_DAYS:g} days of training (assumed) loses {now['lost hours']:,.1f} h in "
            f"expectation. Young's interval for the largest pack ({largest:,.0f} MiB: {save_seconds(largest):.1f} s a save at "
            f"{SAVE_MIB_PER_S:.0f} MiB/s, measured on a local disk): {best:.0f} min, saves {at_best['save hours']:,.0f} h + "
            f"loss {at_best['lost hours']:,.0f} h")


def _disk_line(disk: dict) -> str:
    return (f"checkpoint disk with {disk['jobs']} training jobs at once (the largest packs; model + optimizer state, "
            f"{disk['one copy']:.2f} TiB a copy): {disk['between saves']:.2f} TiB between saves (checkpoint + .prev), "
            f"up to {disk['while saving']:.2f} TiB while all save at once; largest pack {disk['largest MiB']:,.0f} MiB")


def planned_estimate(packs: list[list[dict]], compute: dict, jobs: int | None, studies: Sequence[str] = (),
                     whole: list[list[dict]] | None = None) -> str | None:
    """A few lines for the end of a dry run: the GPU-hours range of the training jobs it plans
    (``packs``, each a list of specs, of the studies ``studies``), and where they are a part of the
    config (``whole``: every pack of the config, trained or not) what the whole config costs, which
    is ``estimate``'s ``all`` row; with ``jobs`` (the Slurm profile's) the checkpoint disk with that
    many of them at once. The same code as :func:`estimate_table`; None when it plans no training."""
    if not packs:
        return None
    (lo, mid, hi), sources = packs_gpu_hours(packs, compute)
    runs = sum(len(p) for p in packs)
    of = f"{runs:,} runs" + (f" of {_names(studies)}" if studies else "")
    lines = [f"Estimate of the {len(packs):,} training jobs this dry run plans ({of}; {compute['precision']}): "
             f"GPU-hours {lo:,.0f} low, {mid:,.0f} central, {hi:,.0f} high (an upper bound where runs stop early)",
             "  rates: " + "; ".join(sorted(sources))]
    if whole is not None:
        lines.append("  " + _whole_line(whole, compute, len(packs), runs))
    if jobs is not None:
        lines.append("  " + _disk_line(packs_checkpoint_disk(packs, jobs)))
    lines.append("  per study and in other precisions: .venv/bin/python -m initmem estimate <config file>")
    return "\n".join(lines)


def _names(studies: Sequence[str]) -> str:
    """``study main`` or ``studies lr_l2, main``."""
    names = sorted(set(studies))
    return ("study " if len(names) == 1 else "studies ") + ", ".join(names)


def _whole_line(whole: list[list[dict]], compute: dict, jobs: int, runs: int) -> str:
    """What the whole config costs beside a dry run's part of it (``jobs`` packs of ``runs`` runs)."""
    total_runs = sum(len(p) for p in whole)
    if (len(whole), total_runs) == (jobs, runs):
        return "that is every run of the config: the `all` row of `initmem estimate`"
    lo, mid, hi = packs_gpu_hours(whole, compute)[0]
    return (f"a part of the config, whose {total_runs:,} runs in {len(whole):,} jobs (trained or not) take "
            f"{lo:,.0f} low, {mid:,.0f} central, {hi:,.0f} high: the `all` row of `initmem estimate`")
