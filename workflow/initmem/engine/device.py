"""Which device a training job trains on, and what it records about it (docs/slurm.md, "GPU jobs").

- No silent CPU: ``compute.device: cuda`` without a usable GPU, or ``auto`` in a job that was given
  a GPU (Slurm's GPU variables or ``CUDA_VISIBLE_DEVICES``), stops at once with one line naming the
  likely cause (the driver against the wheel's CUDA, or no GPU visible) and the fix.
- One GPU per job: under Slurm (or with ``CUDA_VISIBLE_DEVICES`` set) the job trusts what it was
  given and uses its first visible GPU, warning when it sees more than the one it asked for; on a
  workstation with several GPUs and neither set, each job takes a free GPU *slot* (an exclusive
  lock file per GPU, held for the process's life) and logs which.
- Determinism on CUDA: cuDNN picks deterministic algorithms (no autotuning) and cuBLAS gets a
  fixed workspace, so a resumed run repeats the same arithmetic on the same GPU model, driver and
  torch build. Across GPU models, drivers or thread counts results agree only up to rounding.
- Every record's ``env`` says which GPU (index, name, UUID), driver, CUDA/cuDNN versions, the
  precision and determinism flags and ``CUDA_VISIBLE_DEVICES``: :func:`device_environment`.

Not trainer code (not part of a run's identity key): choosing a device never retrains a run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import torch

# Minimum Linux driver per CUDA major version of a torch wheel (NVIDIA's CUDA toolkit release
# notes, "minor version compatibility": any driver at least this runs every 12.x / 13.x runtime).
MIN_DRIVER = {13: 580, 12: 525, 11: 450}
SLURM_GPU_LISTS = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS")  # GPU indices ("0" is a GPU)
SLURM_GPU_COUNTS = ("SLURM_GPUS_ON_NODE", "SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK")  # "0": none
_SLOT_HANDLES: list = []  # open lock files: a slot is held until the process exits


class DeviceError(RuntimeError):
    """The job cannot train where it was told to (one line: cause and fix)."""


def gpu_assignment(environ: dict | None = None) -> str | None:
    """What says this job was given a GPU (``"SLURM_JOB_GPUS=3"``, ``"CUDA_VISIBLE_DEVICES=0"``), or None."""
    env = os.environ if environ is None else environ
    for var in SLURM_GPU_LISTS + SLURM_GPU_COUNTS:
        if env.get(var, "").strip() not in ("", "0" if var in SLURM_GPU_COUNTS else ""):
            return f"{var}={env[var]}"
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() not in ("", "-1", "NoDevFiles"):
        return f"CUDA_VISIBLE_DEVICES={cvd}"
    return None


def driver_version() -> str | None:
    """The NVIDIA driver version from ``nvidia-smi`` (None when it is missing or finds no GPU)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def cuda_diagnosis(driver: str | None, wheel_cuda: str | None, assigned: str | None) -> str:
    """One line: why torch finds no usable CUDA here, and the fix."""
    import torch  # here, not at the top: the run_metrics environment imports DeviceError without torch

    torch_id = f"torch {torch.__version__.split('+')[0]}"
    if wheel_cuda is None:
        return (f"this {torch_id} is a CPU-only build; install a CUDA wheel "
                "(pip install torch --index-url https://download.pytorch.org/whl/cu130, or cu126 for drivers 525-579)")
    need = MIN_DRIVER.get(int(wheel_cuda.split(".")[0]))
    if driver is None:
        seen = f" although {assigned}" if assigned else ""
        return (f"no NVIDIA GPU is visible to this job (nvidia-smi finds none{seen}); ask for one "
                "(Slurm: --gpus=1, the profile's gpu: 1 or gres: gpu:1) and run on a GPU node")
    major = int(driver.split(".")[0])
    if need is not None and major < need:
        return (f"NVIDIA driver {driver} is older than {torch_id} (CUDA {wheel_cuda}) needs (>= {need}); install the wheel "
                f"built for your driver, e.g. pip install torch=={torch.__version__.split('+')[0]} --index-url "
                f"https://download.pytorch.org/whl/cu126 (drivers >= 525), or ask the admins for driver >= {need} (nvidia-smi "
                f"shows the node's; NVIDIA's CUDA Toolkit release notes list each CUDA's minimum; docs/environment.md)")
    return (f"{torch_id} (CUDA {wheel_cuda}) cannot use the GPU with driver {driver} (unsupported GPU architecture, "
            "e.g. Volta for CUDA 13, or a busy/broken device: run nvidia-smi); use a node with a supported GPU")


def _slot_dir() -> Path:
    return Path(os.environ.get("INITMEM_GPU_SLOTS") or Path(tempfile.gettempdir()) / f"initmem-gpu-slots-{os.getuid()}")


def claim_gpu_slot(count: int, log: TextIO | None = sys.stderr, poll_seconds: float = 5.0) -> int:
    """Index of a GPU no other local training job holds (an exclusive lock file per GPU, released
    when this process exits); waits when all ``count`` are busy (run snakemake with
    ``--resources gpu=N`` so that it never starts more training jobs than GPUs)."""
    import fcntl

    folder = _slot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    waited = False
    while True:
        for index in range(count):
            fh = open(folder / f"gpu{index}.lock", "a")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            _SLOT_HANDLES.append(fh)
            return index
        if not waited and log:
            print(f"all {count} GPUs are held by other training jobs ({folder}); waiting for one "
                  "(start snakemake with --resources gpu=N for N GPUs)", file=log, flush=True)
        waited = True
        time.sleep(poll_seconds)


def configure_determinism(device: torch.device) -> None:
    """Deterministic cuDNN algorithms and a fixed cuBLAS workspace on CUDA (no-op elsewhere)."""
    import torch

    if device.type != "cuda":
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts: set before the first matmul
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def pick_device(name: str = "auto", log: TextIO | None = sys.stderr) -> torch.device:
    """The device a training job trains on (see the module docstring); raises :class:`DeviceError`."""
    import torch

    if name not in ("auto", "cpu", "cuda") and not name.startswith("cuda:"):
        return torch.device(name)  # e.g. "meta" in tests
    assigned = gpu_assignment()
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        if name == "auto" and assigned is None:
            if log:
                print("compute.device auto: no GPU assigned and none usable, training on the CPU", file=log, flush=True)
            return torch.device("cpu")
        why = f"compute.device: {name}" if name != "auto" else f"compute.device auto and {assigned}"
        raise DeviceError(f"this job was meant to train on a GPU ({why}) but CUDA is unusable: "
                          f"{cuda_diagnosis(driver_version(), torch.version.cuda, assigned)}")
    count = torch.cuda.device_count()
    if name.startswith("cuda:"):
        device = torch.device(name)
    elif assigned is not None or os.environ.get("SLURM_JOB_ID"):
        device = torch.device("cuda:0")  # the scheduler chose: trust CUDA_VISIBLE_DEVICES
        if count > 1 and log:
            print(f"WARNING: this job sees {count} GPUs ({assigned or 'no CUDA_VISIBLE_DEVICES'}) but trains on one "
                  "(cuda:0); it asked for one: the others idle unless other jobs get them", file=log, flush=True)
    elif count > 1:
        device = torch.device(f"cuda:{claim_gpu_slot(count, log)}")
    else:
        device = torch.device("cuda:0")
    torch.cuda.set_device(device)
    configure_determinism(device)
    if log:
        print(f"training on {device} ({torch.cuda.get_device_name(device)}; "
              f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})", file=log, flush=True)
    return device


def device_environment(device: torch.device) -> dict:
    """What a metrics record's ``env`` says about the hardware and numerics beyond the device name."""
    import torch

    from initmem.engine.compute import tf32_state

    tf32 = tf32_state()
    env = {"host": socket.gethostname(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
           "slurm_job_id": os.environ.get("SLURM_JOB_ID"), "torch_cuda": torch.version.cuda,
           "tf32_matmul": tf32["matmul"], "tf32_cudnn": tf32["cudnn"]}
    if device.type != "cuda":
        return env | {"determinism": "cpu: same results for the same threads and build"}
    props = torch.cuda.get_device_properties(device)
    return env | {
        "gpu_index": device.index if device.index is not None else torch.cuda.current_device(),
        "gpu_name": props.name, "gpu_uuid": str(getattr(props, "uuid", "")), "gpu_capability": f"{props.major}.{props.minor}",
        "gpu_memory_gib": round(props.total_memory / 2**30, 1), "driver": driver_version(),
        "cudnn": torch.backends.cudnn.version(), "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark), "cublas_workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "determinism": "cuda: deterministic cuDNN, fixed cuBLAS workspace (same GPU model, driver and build)"}


# TF32 keeps 10 of float32's 23 explicit mantissa bits: its inputs carry a relative rounding error
# of up to 2^-11 (float32: 2^-24), so a product of TF32-rounded inputs is off from float64 by
# ~1e-4-5e-4 relative, a float32 one by ~1e-6 (direct) to ~1e-5 (Winograd transforms amplify its
# rounding 10-20x). The check emulates TF32 exactly (inputs rounded to 10 bits, product in
# float64) and draws the line at a quarter of that emulated error: far above any float32 algorithm,
# below what TF32 hardware gives (round-to-nearest inputs: about the emulated error; truncation: ~2x).
TF32_DROPPED_BITS = 23 - 10
TF32_THRESHOLD_FRACTION = 0.25


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 values rounded (to nearest) to TF32's 10 mantissa bits, still stored as float32."""
    import torch

    bits = x.to(torch.float32).contiguous().view(torch.int32)
    half, low = 1 << (TF32_DROPPED_BITS - 1), (1 << TF32_DROPPED_BITS) - 1
    return ((bits + half) & ~low).view(torch.float32)


def tf32_check(device: torch.device, conv: Callable | None = None) -> list[dict]:
    """Does TF32 off give float32, and TF32 on give TF32, for a convolution (cuDNN) and a matmul
    (cuBLAS) on ``device``? Per op: the relative error against float64 with TF32 off and on, the
    emulated TF32 error, the threshold (:data:`TF32_THRESHOLD_FRACTION` of it) and the verdicts
    (``on_is_tf32`` is None off CUDA, where TF32 does not exist). The global TF32 flags are restored.
    ``conv(x, w)``: the convolution under test (default ``F.conv2d`` with padding 1 on the inputs' device)."""
    import torch
    import torch.nn.functional as F

    from initmem.engine.compute import set_tf32, tf32_state

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(16, 128, 16, 16, generator=g), torch.randn(128, 128, 3, 3, generator=g) / 34
    a, b = torch.randn(512, 1152, generator=g), torch.randn(1152, 512, generator=g) / 34
    conv = conv or (lambda p, q: F.conv2d(p, q, padding=1))
    ops = {"conv 16x128x16x16, 3x3": (conv, x, w, "cudnn"),
           "matmul 512x1152x512": (torch.matmul, a, b, "matmul")}
    before = tf32_state()
    rel = lambda got, ref: float((got.double().cpu() - ref).norm() / ref.norm())
    out = []
    try:
        for name, (fn, p, q, backend) in ops.items():
            exact = F.conv2d if backend == "cudnn" else torch.matmul
            pad = {"padding": 1} if backend == "cudnn" else {}
            ref = exact(p.double(), q.double(), **pad)
            emulated = rel(exact(round_to_tf32(p).double(), round_to_tf32(q).double(), **pad), ref)
            errors = {}
            for tf32 in (False, True):
                set_tf32(tf32)
                errors[tf32] = rel(fn(p.to(device), q.to(device)), ref)
            threshold = TF32_THRESHOLD_FRACTION * emulated
            out.append({"op": name, "off": errors[False], "on": errors[True], "tf32_expected": emulated, "threshold": threshold,
                        "off_ok": errors[False] < threshold, "on_is_tf32": errors[True] > threshold if device.type == "cuda" else None})
    finally:
        set_tf32(before["matmul"], before["cudnn"])
    return out


def tf32_summary(results: list[dict]) -> str:
    """One line per op of :func:`tf32_check`: the errors and what they mean."""
    lines = []
    for r in results:
        off = "TF32 off works" if r["off_ok"] else "TF32 NOT OFF: float32 runs are not float32"
        on = {None: "TF32 does not exist here", True: "TF32 on is TF32", False: "TF32 on gives float32 (no TF32 on this GPU)"}[r["on_is_tf32"]]
        lines.append(f"TF32 self-check, {r['op']} vs float64: rel. error TF32 off {r['off']:.1e}, on {r['on']:.1e}; "
                     f"emulated TF32 {r['tf32_expected']:.1e}, threshold {r['threshold']:.1e}: {off}; {on}")
    return "\n".join(lines)
