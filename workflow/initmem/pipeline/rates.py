"""Training throughput of one job: a rate model per (architecture, batch size, optimizer family,
pack size, precision), read from a table the device check measured, else from stated defaults.

The model (docs/packs.md, "The rate model"): a step of a pack of N runs at batch size b costs the
host a fixed time t_host (Python dispatch and kernel launches, nearly independent of N under vmap)
or the GPU N*b / r_gpu seconds of arithmetic, whichever is longer, so

    r(N) = min(N * b / t_host, r_gpu)      training images per second of the job.

Measured (``benchmarks/device_check.py`` writes ``rates.csv``; ``compute.rate_table`` names it):
t_host from the smallest measured pack, r_gpu the best measured rate, per key. Not measured: the
stated defaults below, derived for one H200 with today's code (issue 26 "Why" item 10, issue 29):

- t_host = operations per step x 7.3 us, the operations of one run (pack of 1) or of a vmap pack
  (any N > 1: vmap batches each operation, it does not repeat it), non-view aten operations, ~ one
  kernel each, counted on the CPU (``benchmarks/ops_per_step.md``, family means). 7.3 us per
  operation made one b=16 ResNet-9 run of the per-tensor engine 3,000 images/s at the five
  optimizers' mean of 735 operations (the review's anchor, issue 26); the fewer-kernels engine
  (issue 29: 140-185 per ResNet-9 step) keeps the 7.3 us. ResNet-110 = twice ResNet-56's blocks.
- r_gpu = an effective float32 rate / training FLOPs per image: 22.7 TFLOP/s (one b=128 ResNet-9
  run ~10,000 images/s at 2.27 GFLOP per training image, ~1/3 of the H200's 67 TFLOP/s float32
  peak) for ResNet-9; half that for ResNet-56/110 (0.75 and 1.52 GFLOP: 16-64 channels are memory
  bound). TF32 doubles r_gpu, bf16 gives 2.5x r_gpu and 1.3x t_host (autocast's casts).
- Range: defaults are trusted to 0.6x-1.4x (the review's 3,500-7,800 around 4,800 GPU-hours);
  measured rates to 0.85x-1.1x (a short benchmark leaves out epoch ends and a busy node).

Torch-free: the Snakefile sizes packs with it on every parse.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path

FAMILY = {"sgd": "sgd", "sgd_momentum": "sgd", "adam": "adam", "adamw": "adam", "muon": "muon", "muon_full": "muon"}
# (architecture, family) -> (operations per step of one run, of a vmap pack), family means of
# benchmarks/ops_per_step.md; ResNet-110 derived as 2 x ResNet-56 less its head (~25).
OPS_PER_STEP = {  # the fewer-kernels engine (flat-buffer optimizers, native batch norm): today's
    ("resnet9", "sgd"): (141, 249), ("resnet9", "adam"): (158, 266), ("resnet9", "muon"): (185, 298),
    ("resnet56", "sgd"): (754, 1322), ("resnet56", "adam"): (771, 1339), ("resnet56", "muon"): (798, 1371),
    ("resnet110", "sgd"): (1483, 2619), ("resnet110", "adam"): (1517, 2653), ("resnet110", "muon"): (1571, 2717),
}
OPS_PER_STEP_BEFORE = {  # the per-tensor engine before issue 29, for estimate's "what it saves" line
    ("resnet9", "sgd"): (486, 536), ("resnet9", "adam"): (877, 927), ("resnet9", "muon"): (949, 1014),
    ("resnet56", "sgd"): (3130, 3362), ("resnet56", "adam"): (5729, 5961), ("resnet56", "muon"): (5993, 6240),
    ("resnet110", "sgd"): (6235, 6700), ("resnet110", "adam"): (11433, 11900), ("resnet110", "muon"): (11961, 12450),
}
ENGINES = {"fewer-kernels": OPS_PER_STEP, "per-tensor": OPS_PER_STEP_BEFORE}
SECONDS_PER_OP = 7.3e-6
# at the spec's width 64 (the ResNet-9 base; ResNet-56/110 build width // 4 = 16 base channels)
TRAIN_FLOP_PER_IMAGE = {"resnet9": 2.27e9, "resnet56": 0.75e9, "resnet110": 1.52e9}
EFFECTIVE_FLOPS = {"resnet9": 22.7e12, "resnet56": 11.35e12, "resnet110": 11.35e12}  # float32, one H200
PRECISION_GPU = {"float32": 1.0, "tf32": 2.0, "bf16": 2.5}
PRECISION_HOST = {"float32": 1.0, "tf32": 1.0, "bf16": 1.3}
RANGE = {"defaults": (0.6, 1.4), "measured": (0.85, 1.1)}
DEFAULTS_SOURCE = "stated defaults for one H200, not measured (initmem/pipeline/rates.py; docs/packs.md)"
COLUMNS = ("arch", "width", "batch_size", "family", "pack", "precision", "images_per_s")


@dataclass(frozen=True)
class Rate:
    """Training images/s of one job: central estimate, range and where it comes from."""

    low: float
    central: float
    high: float
    source: str


def family(optimizer: str) -> str:
    """The optimizer family a rate is shared by (sgd, adam, muon)."""
    return FAMILY[optimizer]


def default_curve(arch: str, width: int, batch_size: int, fam: str, precision: str, pack: int = 1,
                  engine: str = "fewer-kernels") -> tuple[float, float]:
    """(t_host seconds per step, r_gpu images/s) of the stated defaults for a pack of ``pack`` runs
    (``engine``: a key of :data:`ENGINES`; the older one only for comparisons)."""
    single, packed = ENGINES[engine][(arch, fam)]
    t_host = (single if pack == 1 else packed) * SECONDS_PER_OP * PRECISION_HOST[precision]
    flop = TRAIN_FLOP_PER_IMAGE[arch] * (width / 64) ** 2  # convolutions scale with the channels squared
    return t_host, EFFECTIVE_FLOPS[arch] / flop * PRECISION_GPU[precision]


class RateModel:
    """r(N) per key, from measured points (``{key: {pack: images/s}}``) where there are any."""

    def __init__(self, measured: dict[tuple, dict[int, float]] | None = None, source: str = DEFAULTS_SOURCE,
                 engine: str = "fewer-kernels"):
        self.measured, self.source, self.engine = measured or {}, source, engine

    @classmethod
    def from_csv(cls, path: str | Path) -> RateModel:
        """A table with the columns :data:`COLUMNS` (what the device check writes)."""
        measured: dict[tuple, dict[int, float]] = {}
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        if not rows or not set(COLUMNS) <= set(rows[0]):
            raise ValueError(f"{path}: a rate table needs the columns {', '.join(COLUMNS)} (benchmarks/device_check.py writes it)")
        for row in rows:
            key = (row["arch"], int(row["width"]), int(row["batch_size"]), row["family"], row["precision"])
            measured.setdefault(key, {})[int(row["pack"])] = float(row["images_per_s"])
        return cls(measured, f"measured: {path}")

    def curve(self, arch: str, width: int, batch_size: int, fam: str, precision: str, pack: int = 2) -> tuple[float, float, str]:
        """(t_host, r_gpu, source kind) for one key and pack size (defaults: a single run's t_host differs)."""
        points = self.measured.get((arch, width, batch_size, fam, precision))
        if not points:
            return (*default_curve(arch, width, batch_size, fam, precision, pack, self.engine), "defaults")
        smallest = min(points)
        return smallest * batch_size / points[smallest], max(points.values()), "measured"

    def rate(self, spec: dict, pack: int, precision: str) -> Rate:
        """Images/s of a job training ``pack`` runs like ``spec`` in ``precision``."""
        b = int(spec["batch_size"])
        t_host, r_gpu, kind = self.curve(spec["arch"], int(spec["width"]), b, family(spec["optimizer"]), precision, pack)
        central = min(pack * b / t_host, r_gpu)
        low, high = RANGE[kind]
        return Rate(central * low, central, central * high, self.source if kind == "measured" else DEFAULTS_SOURCE)

    def knee(self, spec: dict, precision: str) -> int:
        """The smallest pack size at which a job stops gaining throughput (launch-bound below it)."""
        b = int(spec["batch_size"])
        t_host, r_gpu, _ = self.curve(spec["arch"], int(spec["width"]), b, family(spec["optimizer"]), precision)
        return max(1, math.ceil(r_gpu * t_host / b))


@functools.lru_cache(maxsize=8)
def load_rates(path: str | None, engine: str = "fewer-kernels") -> RateModel:
    """The rate model of ``compute.rate_table`` (None: the stated defaults of ``engine``), read once per process."""
    if path is None:
        return RateModel(engine=engine)
    if not Path(path).is_file():
        raise FileNotFoundError(f"compute.rate_table: {path} does not exist; run benchmarks/device_check.py on the GPU "
                                "and commit its rates.csv, or set rate_table: null for the stated defaults")
    return RateModel.from_csv(path)
