"""What each figure and table needs, and per-pack resource estimates. Torch- and matplotlib-free:
the Snakefile imports it on every parse."""

from __future__ import annotations

import difflib
import math

# Figure -> (studies it cannot do without, studies it uses when the config has them).
FIGURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "fig1": (("main",), ()),
    "fig2": (("main",), ()),
    "fig3": (("main",), ()),
    "fig4": (("long", "lr_l2"), ("main",)),
    "fig5": (("depth",), ("main",)),
    "fig6": (("main",), ("lr_l2",)),
    "fig7": (("depth",), ("main",)),
    "fig8": (("norm_aug",), ("main",)),  # main: the no-augmentation BatchNorm baseline
    "fig10": (("clock",), ("main", "lr_l2")),  # the clock tier: |beta| and spread against epochs, steps, clocks
}

# Studies that tables read beyond the figures' (paper_tables.md's Table 7, the recipe claims).
TABLE_STUDIES = ("best_recipe",)


def figure_studies(figure: str, studies: list[str]) -> list[str] | None:
    """Studies a figure reads given the configured ``studies``; None when a required one is missing."""
    required, optional = FIGURES[figure]
    if not all(s in studies for s in required):
        return None
    return list(required) + [s for s in optional if s in studies]


# Figures built from the library alone, in every config (rule linear_check in workflow/rules/theory.smk).
STANDALONE_FIGURES = ("fig9",)


def buildable_figures(studies: list[str]) -> list[str]:
    """Figures whose required studies the config has, and the standalone ones."""
    return [f for f in FIGURES if figure_studies(f, studies) is not None] + list(STANDALONE_FIGURES)


def unused_studies_warning(studies: list[str]) -> str | None:
    """One line when a configured study is read by no figure or table (a typo such as ``mainn``
    silently drops the figures that need ``main``): what is dropped and the likely fix."""
    known = sorted({s for required, optional in FIGURES.values() for s in required + optional} | set(TABLE_STUDIES))
    unknown = [s for s in studies if s not in known]
    if not unknown:
        return None
    hints = [f"{s} -> {m[0]}?" for s in unknown if (m := difflib.get_close_matches(s, known, n=1))]
    dropped = [f"{f} (needs {', '.join(r for r in FIGURES[f][0] if r not in studies)})" for f in FIGURES
               if figure_studies(f, studies) is None]
    return (f"WARNING: stud{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} "
            f"read by no figure or table (only runs.csv, spreads.csv, beta.csv); figures not built: {', '.join(dropped) or 'none'}. "
            f"Studies the figures and tables read: {', '.join(known)}" + (f"; rename {'; '.join(hints)}" if hints else ""))


def pack_runtime_minutes(specs: list[dict], images_per_second: float, max_minutes: int | None = None) -> int:
    """Wall-clock estimate of a pack job at ``images_per_second`` (all members together) with a 1.5x
    safety margin, capped at ``max_minutes`` (a cluster's time limit: a capped job is stopped by
    SIGTERM, checkpoints, and resumes when Snakemake resubmits it).

    Per epoch a run processes n_train training images and evaluates n_val + n_test images (about a
    third of the cost of a training image each).
    """
    images = sum(run_images(s) for s in specs)
    minutes = int(math.ceil(1.5 * images / images_per_second / 60)) + 5
    return minutes if max_minutes is None else min(minutes, max_minutes)


def pack_mem_mb(specs: list[dict]) -> int:
    """Host memory estimate: the float32 data splits, plus 2 GB of headroom for the model and torch."""
    s = specs[0]
    data_mb = (s["n_train"] + s["n_val"] + s["n_test"]) * 3 * 32 * 32 * 4 / 2**20
    return int(2048 + 2 * data_mb)


def run_images(spec: dict) -> float:
    """Training-image equivalents one run processes (an evaluated image counts a third)."""
    return spec["epochs"] * (spec["n_train"] + (spec["n_val"] + spec["n_test"]) / 3)


def study_gpu_hours(runs_by_study: dict, images_per_second: float) -> dict[str, tuple[int, float]]:
    """Per study: (runs, hours at ``images_per_second`` per training job, one job at a time per GPU).

    Early stopping (ResNet-56/110) makes the real figure smaller; the estimate is an upper bound.
    """
    return {study: (len(runs), sum(run_images(r.spec) for r in runs) / images_per_second / 3600)
            for study, runs in runs_by_study.items()}


def fitting_pack_size(specs: list[dict], size: int, compute: dict, where: str) -> int:
    """Runs per pack for one configuration's ``specs``: at most ``size`` (the memory budget), and
    few enough that the job's runtime estimate fits one ``compute.max_runtime_minutes`` attempt.

    A single run longer than one attempt is allowed when it fits ``compute.attempts`` of them (it
    checkpoints at SIGTERM and resumes on the next attempt); longer than that it can never finish,
    and the config is refused here, at DAG time, not after days of failed jobs.
    """
    from initmem.spec import ConfigError

    cap = compute.get("max_runtime_minutes")
    if cap is None:
        return size
    ips = compute["images_per_second"]
    while size > 1 and pack_runtime_minutes(specs[:size], ips) > cap:
        size -= 1
    one = pack_runtime_minutes(specs[:1], ips)
    attempts = int(compute.get("attempts", 1))
    if one > cap * attempts:
        raise ConfigError(
            f"{where}: one run needs ~{one / 60:.0f} h at compute.images_per_second = {ips:g} "
            f"(1.5x margin), more than compute.attempts = {attempts} x compute.max_runtime_minutes = {cap} "
            "can give; raise max_runtime_minutes or attempts (the profile's retries + 1), or measure "
            "a higher images_per_second")
    return size
