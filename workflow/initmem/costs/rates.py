"""Training throughput of one job: a rate model per (architecture, width, batch size, optimizer
family, precision) and pack size, read from a table the device check measured, else from stated
defaults. Torch-free: the Snakefile sizes packs with it on every parse.

**Measured** (``benchmarks/device_check.py`` writes ``rates.csv``; ``compute.rate_table`` names it):
per key, the job's images/s r(N) at the pack sizes measured. A pack of N is reported as

- a measured N: its rate;
- between measured packs N1 < N < N2: log r linear in log N (a power law through both points, which
  is exact where a job is launch-bound, r ~ N, and where it is saturated, r constant; a chord of a
  curve that is concave in log-log lies below it), and never above r(N2), the nearest larger pack
  measured (a pack of 1 trains dense convolutions, a vmap pack grouped ones, which can be slower);
- below the smallest measured pack N1: r(N1) N / N1 (the per-run rate of N1, no gain assumed);
- above the largest measured pack Nk: r(Nk) (no extrapolation upward).

**Stated defaults** (no measured point for the key): r(N) = min(N b / t_host, r_gpu), for one H200:

- t_host = operations per step x 7.3 us: the operations of one run (pack of 1) or of a vmap pack
  (any N > 1: vmap batches each operation, it does not repeat it), non-view aten operations, about
  one kernel each, counted on the CPU (``benchmarks/ops_per_step.md``, family means); ResNet-110 =
  twice ResNet-56's blocks. 7.3 us per operation is an estimate for one H200 host, not measured.
- r_gpu = an effective float32 rate / training FLOPs per image: 22.7 TFLOP/s (one b=128 ResNet-9
  run ~10,000 images/s at 2.27 GFLOP per training image, ~1/3 of the H200's 67 TFLOP/s float32
  peak) for ResNet-9; half that for ResNet-56/110 (0.75 and 1.52 GFLOP: 16-64 channels are memory
  bound). TF32 doubles r_gpu (an estimate: no public same-GPU float32 vs TF32 ResNet measurement).
- bf16 over TF32 on the same GPU: 2.6x r_gpu for ResNet-9, from NVIDIA's published ResNet-50 v1.5
  PyTorch training throughput on one A100 80GB (DeepLearningExamples, NGC pytorch-21.03: TF32 938
  images/s, mixed precision 2,470, 2.63x), whose dense 3x3 convolutions of 64-512 channels ResNet-9
  resembles; 2.0x for ResNet-56/110 (16-64 channels are memory bound, and half the bytes cap the
  gain at 2x). t_host x1.3 (autocast's casts). No public measurement covers ResNet-9 itself in
  bf16, nor grouped convolutions (vmap packs) in any precision: measure them (the device check).
- Range: defaults are trusted to 0.6x-1.4x; measured rates to 0.85x-1.1x (a short benchmark leaves
  out epoch ends and a busy node).
"""

from __future__ import annotations

import bisect
import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path

from initmem.costs.facts import entry_fact, rate_family

# The shipped architectures' numbers of the rate model; a new architecture file states its own as
# module-level literals of the same names (OPS_PER_STEP: {family: (one run, a pack)}; initmem.costs.facts.entry_fact).
# architecture -> family -> (operations per step of one run, of a vmap pack), family means of
# benchmarks/ops_per_step.md; ResNet-110 derived as 2 x ResNet-56 less its head (~25).
OPS_PER_STEP = {
    "resnet9": {"sgd": (141, 249), "adam": (158, 266), "muon": (185, 298)},
    "resnet56": {"sgd": (754, 1322), "adam": (771, 1339), "muon": (798, 1371)},
    "resnet110": {"sgd": (1483, 2619), "adam": (1517, 2653), "muon": (1571, 2717)},
}
SECONDS_PER_OP = 7.3e-6
# at the spec's width 64 (the ResNet-9 base; ResNet-56/110 build width // 4 = 16 base channels)
TRAIN_FLOP_PER_IMAGE = {"resnet9": 2.27e9, "resnet56": 0.75e9, "resnet110": 1.52e9}
EFFECTIVE_FLOPS = {"resnet9": 22.7e12, "resnet56": 11.35e12, "resnet110": 11.35e12}  # float32, one H200
TF32_GPU = 2.0  # r_gpu of tf32 over float32
BF16_OVER_TF32 = {"resnet9": 2.6, "resnet56": 2.0, "resnet110": 2.0}  # r_gpu, the same GPU
PRECISION_HOST = {"float32": 1.0, "tf32": 1.0, "bf16": 1.3}
RANGE = {"defaults": (0.6, 1.4), "measured": (0.85, 1.1)}
DEFAULTS_SOURCE = "stated defaults for one H200, not measured (initmem/costs/rates.py; docs/packs.md)"
COLUMNS = ("arch", "width", "batch_size", "family", "pack", "precision", "images_per_s")
# Optional columns of a rate table: the GPU and the software it was measured with (the device check writes them)
ENVIRONMENT_COLUMNS = ("device", "torch", "cuda", "cudnn")
SUSPICIOUS = 3.0  # a measured rate above this many times the stated default is flagged
COMPILE_LABELS = {False: "off", True: "forward", "step": "step"}  # a table's optional ``compile`` column: compute.compile


@dataclass(frozen=True)
class Rate:
    """Training images/s of one job: central estimate, range and where it comes from."""

    low: float
    central: float
    high: float
    source: str


def family(optimizer: str) -> str:
    """The optimizer family a rate is shared by (sgd, adam, muon): :func:`initmem.costs.facts.rate_family`."""
    return rate_family(optimizer)


def _arch(arch: str, key: str, shipped: dict):
    """An architecture's rate-model number: its file's ``key``, else the shipped table's."""
    return entry_fact("arch", arch, key, shipped)


def precision_gpu(arch: str, precision: str) -> float:
    """r_gpu of ``precision`` over float32 (the stated defaults)."""
    if precision not in PRECISION_HOST:
        raise ValueError(f"unknown precision {precision!r}; choose one of {tuple(PRECISION_HOST)}")
    return {"float32": 1.0, "tf32": TF32_GPU, "bf16": TF32_GPU * _arch(arch, "BF16_OVER_TF32", BF16_OVER_TF32)}[precision]


def default_curve(arch: str, width: int, batch_size: int, fam: str, precision: str, pack: int = 1) -> tuple[float, float]:
    """(t_host seconds per step, r_gpu images/s) of the stated defaults for a pack of ``pack`` runs."""
    single, packed = _arch(arch, "OPS_PER_STEP", OPS_PER_STEP)[fam]
    t_host = (single if pack == 1 else packed) * SECONDS_PER_OP * PRECISION_HOST[precision]
    flop = _arch(arch, "TRAIN_FLOP_PER_IMAGE", TRAIN_FLOP_PER_IMAGE) * (width / 64) ** 2  # convolutions scale with the channels squared
    return t_host, _arch(arch, "EFFECTIVE_FLOPS", EFFECTIVE_FLOPS) / flop * precision_gpu(arch, precision)


def interpolate(points: dict[int, float], pack: int) -> float:
    """A job's images/s for a pack of ``pack`` from measured ``{pack: images/s}`` (module docstring):
    power law between neighbours capped at the larger one, per-run rate below, flat above."""
    if pack < 1:
        raise ValueError(f"pack size {pack} must be >= 1")
    sizes = sorted(points)
    if pack in points:
        return points[pack]
    i = bisect.bisect_left(sizes, pack)
    if i == 0:
        return points[sizes[0]] * pack / sizes[0]
    if i == len(sizes):
        return points[sizes[-1]]
    n1, n2 = sizes[i - 1], sizes[i]
    r1, r2 = points[n1], points[n2]
    t = math.log(pack / n1) / math.log(n2 / n1)
    return min(math.exp(math.log(r1) + t * math.log(r2 / r1)), r2)


class RateModel:
    """r(N) per key, from measured points (``{key: {pack: images/s}}``) where there are any."""

    def __init__(self, measured: dict[tuple, dict[int, float]] | None = None, source: str = DEFAULTS_SOURCE,
                 environments: frozenset[tuple[str, ...]] = frozenset()):
        self.measured, self.source = measured or {}, source
        self.environments = environments  # (device, torch, cuda, cudnn) of the rows read, "" where a table lacks the column
        for key, points in self.measured.items():
            bad = [(n, r) for n, r in points.items() if not (n >= 1 and r > 0 and math.isfinite(r))]
            if bad:
                raise ValueError(f"{source}: rates of {key} need packs >= 1 and images/s > 0, got {bad}")

    @classmethod
    def from_csv(cls, path: str | Path, compile: bool | str = False) -> RateModel:
        """A table with the columns :data:`COLUMNS` (what the device check writes); of a table with a
        ``compile`` column, the rows measured with ``compile`` (``compute.compile``), else none."""
        measured: dict[tuple, dict[int, float]] = {}
        environments = set()
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows or not set(COLUMNS) <= set(rows[0]):
            raise ValueError(f"{path}: a rate table needs the columns {', '.join(COLUMNS)} (benchmarks/device_check.py writes it)")
        for row in rows:
            if row.get("compile", "off") != COMPILE_LABELS[compile]:
                continue
            key = (row["arch"], int(row["width"]), int(row["batch_size"]), row["family"], row["precision"])
            measured.setdefault(key, {})[int(row["pack"])] = float(row["images_per_s"])
            environments.add(tuple((row.get(c) or "").strip() for c in ENVIRONMENT_COLUMNS))
        return cls(measured, f"measured: {path}", frozenset(environments))

    def above_default(self, factor: float = SUSPICIOUS) -> list[tuple[tuple, int, float]]:
        """Measured points above ``factor`` times the stated default of their key and pack size, as
        (key, pack, ratio), largest ratio first: a timing or a table to check before trusting it."""
        found = []
        for (arch, width, b, fam, precision), points in self.measured.items():
            for pack, rate in points.items():
                t_host, r_gpu = default_curve(arch, width, b, fam, precision, pack)
                ratio = rate / min(pack * b / t_host, r_gpu)
                if ratio > factor:
                    found.append(((arch, width, b, fam, precision), pack, ratio))
        return sorted(found, key=lambda f: -f[2])

    def job_rate(self, arch: str, width: int, batch_size: int, fam: str, precision: str, pack: int) -> tuple[float, str]:
        """(images/s of a job training ``pack`` runs, source kind: measured or defaults) for one key."""
        points = self.measured.get((arch, width, batch_size, fam, precision))
        if points:
            return interpolate(points, pack), "measured"
        t_host, r_gpu = default_curve(arch, width, batch_size, fam, precision, pack)
        return min(pack * batch_size / t_host, r_gpu), "defaults"

    def rate(self, spec: dict, pack: int, precision: str) -> Rate:
        """Images/s of a job training ``pack`` runs like ``spec`` in ``precision``."""
        central, kind = self.job_rate(spec["arch"], int(spec["width"]), int(spec["batch_size"]), family(spec["optimizer"]),
                                      precision, pack)
        low, high = RANGE[kind]
        return Rate(central * low, central, central * high, self.source if kind == "measured" else DEFAULTS_SOURCE)

    def knee(self, spec: dict, precision: str) -> int:
        """The smallest pack size at which a job stops gaining throughput (launch-bound below it)."""
        arch, width, b, fam = spec["arch"], int(spec["width"]), int(spec["batch_size"]), family(spec["optimizer"])
        points = self.measured.get((arch, width, b, fam, precision))
        if points:
            best = max(points.values())
            return min(n for n, r in points.items() if r == best)
        t_host, r_gpu = default_curve(arch, width, b, fam, precision, 2)
        return max(1, math.ceil(r_gpu * t_host / b))


@functools.lru_cache(maxsize=8)
def load_rates(path: str | None, compile: bool | str = False) -> RateModel:
    """The rate model of ``compute.rate_table`` (None: the stated defaults) for jobs compiled as
    ``compute.compile``, read once per process."""
    if path is None:
        return RateModel()
    if not Path(path).is_file():
        raise FileNotFoundError(f"compute.rate_table: {path} does not exist; run benchmarks/device_check.py on the GPU "
                                "and commit its rates.csv, or set rate_table: null for the stated defaults")
    return RateModel.from_csv(path, compile)
