"""What each figure and table needs, and per-pack resource estimates. Torch- and matplotlib-free:
the Snakefile imports it on every parse."""

from __future__ import annotations

import difflib
import math

from initmem.costs.facts import entry_fact
from initmem.spec import OPTIMIZERS, entry_info

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


def needs_analysis(targets: list[str], tables_dir: str, figures_dir: str) -> bool:
    """Whether building ``targets`` (none: the default target, every table and figure) computes
    spreads or |beta|: ``all``, ``tables``, ``figures`` and the files of the tables and figures
    folders, but a study's own tables and the theory's (clocks.csv, linear_check.csv, Figure 9)."""
    if not targets:
        return True
    theory = {f"{tables_dir}/clocks.csv", f"{tables_dir}/linear_check.csv"}
    theory |= {f"{figures_dir}/{fig}.{ext}" for fig in STANDALONE_FIGURES for ext in ("pdf", "png")}
    for target in targets:
        path = target.removeprefix("./")
        if path in ("all", "tables", "figures"):
            return True
        if path in theory or path.startswith(f"{tables_dir}/studies/"):
            continue
        if path.startswith((f"{tables_dir}/", f"{figures_dir}/")):
            return True
    return False


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
    SIGTERM, checkpoints, requeues itself and resumes: :mod:`initmem.pipeline.continuation`).

    What a run processes: :func:`run_images`.
    """
    images = sum(run_images(s) for s in specs)
    minutes = int(math.ceil(1.5 * images / images_per_second / 60)) + 5
    return minutes if max_minutes is None else min(minutes, max_minutes)


# Host memory model of a training job (MiB), benchmarks/checkpoint_memory.md for the checkpoint part.
HOST_BASE_MB = 1024          # Python, numpy, torch and the job's Snakemake wrapper
CUDA_CONTEXT_MB = 2560       # host side of the CUDA/cuDNN/cuBLAS context (1-2.5 GB measured elsewhere)
# PARAMS_AT_WIDTH_64 and ACTIVATION_MB_PER_IMAGE: the shipped architectures'; a new architecture
# file states its own as module-level literals of the same names (initmem.costs.facts.entry_fact)
PARAMS_AT_WIDTH_64 = {"resnet9": 6_575_370, "resnet56": 857_706, "resnet110": 1_734_666}
# optimizer tensors per parameter, from each optimizer file's SLOTS (sgd 0, sgd_momentum 1, Adam and Muon 2, Lion 1)
STATE_SLOTS = {name: len(entry_info("optimizer", name).get("SLOTS", {})) for name in OPTIMIZERS}
CHECKPOINT_PEAK = 1.5        # host peak of a checkpoint save or load over the state (measured <= 1.5x)
ACTIVATION_MB_PER_IMAGE = {"resnet9": 6.7, "resnet56": 8.6, "resnet110": 16.9}  # float32, width 64, saved for backward
MARGIN = 1.2


def pack_state_mb(specs: list[dict]) -> float:
    """Checkpointed state of a pack: parameters plus optimizer slots, float32."""
    s = specs[0]
    params = entry_fact("arch", s["arch"], "PARAMS_AT_WIDTH_64", PARAMS_AT_WIDTH_64) * (int(s["width"]) / 64) ** 2
    return len(specs) * params * (1 + STATE_SLOTS[s["optimizer"]]) * 4 / 2**20


def pack_mem_mb(specs: list[dict], device: str = "cpu") -> int:
    """Host memory a pack's training job asks for, from a stated model (docs/slurm.md, "Host memory"):
    the process and, on a GPU, the CUDA context; the data as loaded (uint8 splits, plus the float32
    copy being built: all splits stay in host memory on the CPU, only the transient on a GPU);
    the checkpoint peak (``CHECKPOINT_PEAK`` x the state); on the CPU the activations; and a 20%
    margin. ``device`` is ``compute.device`` (auto: the larger of both)."""
    if device == "auto":
        return max(pack_mem_mb(specs, "cpu"), pack_mem_mb(specs, "cuda"))
    s = specs[0]
    final = int(s.get("final_test", 0))  # beyond n_test: the test split's first final_test images, a file of their own
    n_images = s["n_train"] + s["n_val"] + s["n_test"] + (final if final > s["n_test"] else 0)
    uint8_mb, train_f32_mb = n_images * 3072 / 2**20, s["n_train"] * 3072 * 4 / 2**20
    total = HOST_BASE_MB + uint8_mb + CHECKPOINT_PEAK * pack_state_mb(specs)
    if device == "cpu":
        activations = len(specs) * int(s["batch_size"]) * entry_fact("arch", s["arch"], "ACTIVATION_MB_PER_IMAGE", ACTIVATION_MB_PER_IMAGE) * int(s["width"]) / 64
        total += 4 * uint8_mb + train_f32_mb + activations
    else:
        total += CUDA_CONTEXT_MB + 2 * train_f32_mb
    return int(math.ceil(MARGIN * total))


def forward_images(spec: dict) -> int:
    """Images one run passes forward without a step: every epoch the validation and test splits, and the
    training set once for each of ``bn_eval: precise`` (its statistics recomputed) and ``train_eval: true``
    (evaluated); after training, the selected network's ``final_test`` images once (the precise statistics
    recomputed before them)."""
    precise = spec.get("bn_eval", "moving") == "precise"
    n_train, final = int(spec["n_train"]), int(spec.get("final_test") or 0)
    per_epoch = int(spec["n_val"]) + int(spec["n_test"]) + n_train * (precise + bool(spec.get("train_eval", False)))
    return int(spec["epochs"]) * per_epoch + final + (n_train if precise and final else 0)


def run_images(spec: dict) -> float:
    """Training-image equivalents one run processes: its trained images, and its :func:`forward_images` at a
    third of a trained image each."""
    return int(spec["epochs"]) * int(spec["n_train"]) + forward_images(spec) / 3


def pack_rate(specs: list[dict], compute: dict):
    """Images/s of the job training ``specs`` (an :class:`initmem.costs.rates.Rate`): ``compute.images_per_second``
    when the config sets one (an assumed flat rate), else the rate model of ``compute.rate_table``."""
    from initmem.costs.rates import Rate, load_rates

    ips = compute.get("images_per_second")
    if ips is not None:
        return Rate(ips, ips, ips, f"compute.images_per_second = {ips:g} (assumed, flat)")
    return load_rates(compute.get("rate_table"), compute.get("compile", False)).rate(specs[0], len(specs), compute["precision"])


def job_runtime_minutes(specs: list[dict], compute: dict) -> int:
    """The runtime a pack's job asks for: :func:`pack_runtime_minutes` at :func:`pack_rate`'s central
    rate plus, with ``compute.compile`` on, its compile minutes
    (:func:`initmem.costs.compilecost.compile_minutes`), capped at ``compute.max_runtime_minutes``."""
    from initmem.costs.compilecost import compile_minutes

    minutes = pack_runtime_minutes(specs, pack_rate(specs, compute).central) + compile_minutes(specs, compute)
    cap = compute.get("max_runtime_minutes")
    return minutes if cap is None else min(minutes, cap)


def job_mem_mb(specs: list[dict], compute: dict) -> int:
    """The host memory a pack's job asks for: :func:`pack_mem_mb` on ``compute.device`` plus, with
    ``compute.compile`` on, the compile workers' (:func:`initmem.costs.compilecost.compile_mem_mb`)."""
    from initmem.costs.compilecost import compile_mem_mb

    return pack_mem_mb(specs, compute["device"]) + compile_mem_mb(compute)


def training_minutes_per_attempt(specs: list[dict], compute: dict, cap: int, where: str) -> int:
    """Minutes of one ``cap``-minute attempt left for training once the job has compiled (all of
    them with ``compute.compile`` off); refused when compiling leaves none."""
    from initmem.costs.compilecost import compile_minutes
    from initmem.spec import ConfigError

    compiling = compile_minutes(specs, compute)
    if compiling >= cap:
        raise ConfigError(f"{where}: compute.compile needs ~{compiling} minutes per attempt, no less than "
                          f"compute.max_runtime_minutes = {cap}; raise the time limit or turn compile off")
    return cap - compiling


def fitting_pack_size(specs: list[dict], size: int, compute: dict, where: str) -> int:
    """Runs per pack for one configuration's ``specs``: at most ``size`` (the memory budget), and
    the most whose runtime estimate fits one ``compute.max_runtime_minutes`` attempt.

    With a rate model a pack below its knee is launch-bound: each added run costs no time, so packs
    grow up to the knee, then as far as the cap allows. A single run longer than one attempt is
    allowed when it fits ``compute.attempts`` of them (it checkpoints at SIGTERM and resumes on the
    next attempt); then its pack takes the most runs that need no more attempts than one run does.
    Longer than all attempts it can never finish, and the config is refused here, at DAG time.
    With ``compute.compile`` on, each attempt first compiles: the minutes left of it for training
    (:func:`training_minutes_per_attempt`) are what runs must fit.
    """
    from initmem.spec import ConfigError

    limit = compute.get("max_runtime_minutes")
    if limit is None:
        return size
    cap = training_minutes_per_attempt(specs, compute, limit, where)

    def minutes(n: int) -> int:
        return pack_runtime_minutes(specs[:n], pack_rate(specs[:n], compute).central)

    one = minutes(1)
    attempts = int(compute.get("attempts", 1))
    if one > cap * attempts:
        rate = pack_rate(specs[:1], compute)
        raise ConfigError(
            f"{where}: one run needs ~{one / 60:.0f} h at {rate.central:,.0f} images/s ({rate.source}; 1.5x margin), "
            f"more than compute.attempts = {attempts} x compute.max_runtime_minutes = {limit} "
            + (f"(less {limit - cap} compile minutes each) " if cap != limit else "") +
            "can give; raise max_runtime_minutes or attempts (time-limit continuations + 1), or measure the rate "
            "(benchmarks/device_check.py)")
    allowed = math.ceil(one / cap)  # attempts one run needs
    while size > 1 and math.ceil(minutes(size) / cap) > allowed:
        size -= 1
    return size
