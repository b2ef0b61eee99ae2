"""GPU jobs, proved on the CPU: streamed checkpoints that load on any device, no silent CPU
training, one GPU per job, time-based checkpoints (docs/slurm.md "GPU jobs")."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc

import pytest
import torch

from initmem.engine import device as devmod
from initmem.engine.checkpoint import CheckpointSchedule, load_checkpoint, save_checkpoint
from initmem.engine.settings import TrainSettings


def _state(mib: int = 16) -> dict:
    return {"model": {"w": torch.randn(mib, 1 << 18)}, "step": 3}


def test_checkpoints_stream_without_a_whole_copy_in_python_memory(tmp_path):
    """A 16 MiB state: saving and loading allocate ~2 MiB of Python memory (the old code held the
    whole blob in a BytesIO, then getvalue() and read_bytes() copies: >= 32 MiB)."""
    state = _state(16)
    tracemalloc.start()
    try:
        save_checkpoint(tmp_path / "c.ckpt", {"s": 1}, state)
        save_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        loaded = load_checkpoint(tmp_path / "c.ckpt", {"s": 1})
        load_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert torch.equal(loaded["model"]["w"], state["model"]["w"]) and loaded["step"] == 3
    assert save_peak < 4 * 2**20 and load_peak < 4 * 2**20, (save_peak / 2**20, load_peak / 2**20)


def test_a_checkpoint_written_on_a_gpu_loads_where_there_is_none(tmp_path, monkeypatch):
    """Saved with CUDA location tags (as on a GPU), it loads onto the CPU instead of being reported
    unreadable (which made the run start from scratch)."""
    state = _state(1)
    with monkeypatch.context() as m:
        m.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        save_checkpoint(tmp_path / "c.ckpt", {"s": 1}, state)
    loaded = load_checkpoint(tmp_path / "c.ckpt", {"s": 1})
    assert loaded["model"]["w"].device.type == "cpu" and torch.equal(loaded["model"]["w"], state["model"]["w"])


def test_a_cpu_checkpoint_resumes_on_another_device_with_its_optimizer_state_there(tmp_path):
    """CPU -> 'GPU' (the meta device stands in for cuda): the trainers load with map_location=their
    device, so the model's and the optimizer's state land there and the next step runs."""
    from initmem.engine.models import build_model
    from initmem.engine.optim import KerasOptimizer

    model = build_model("resnet9", 4, "batchnorm", "max")
    opt = KerasOptimizer("adam", list(model.parameters()), None, None)
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    opt.step(1e-3)
    save_checkpoint(tmp_path / "c.ckpt", {"s": 1}, {"model": model.state_dict(), "optimizer": opt.state_dict()})

    meta = build_model("resnet9", 4, "batchnorm", "max").to("meta")
    resumed = load_checkpoint(tmp_path / "c.ckpt", {"s": 1}, map_location="meta")
    meta.load_state_dict(resumed["model"], assign=True)
    opt2 = KerasOptimizer("adam", list(meta.parameters()), None, None)
    opt2.load_state_dict(resumed["optimizer"])
    assert {t.device.type for s in opt2.state for t in s.values() if isinstance(t, torch.Tensor)} == {"meta"}
    for p in meta.parameters():
        p.grad = torch.zeros_like(p)
    opt2.step(1e-3)  # would raise "Expected all tensors to be on the same device" with CPU state


def test_optimizer_state_follows_its_parameters_whatever_the_checkpoint_held(tmp_path):
    """The other half of "resume anywhere": state loaded onto the CPU follows meta parameters."""
    from initmem.engine.models import build_model
    from initmem.engine.optim import KerasOptimizer

    model = build_model("resnet9", 4, "batchnorm", "max")
    opt = KerasOptimizer("adam", list(model.parameters()), None, None)
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    opt.step(1e-3)
    meta = build_model("resnet9", 4, "batchnorm", "max").to("meta")
    opt2 = KerasOptimizer("adam", list(meta.parameters()), None, None)
    opt2.load_state_dict(opt.state_dict())
    devices = {t.device.type for s in opt2.state for t in s.values() if isinstance(t, torch.Tensor)}
    assert devices == {"meta"}, f"optimizer state stayed on {devices} while its parameters are on meta"
    for p in meta.parameters():
        p.grad = torch.zeros_like(p)
    opt2.step(1e-3)


def test_time_based_checkpoints_are_due_after_the_interval_and_epoch_ones_never_after_the_last_epoch():
    now = [0.0]
    schedule = CheckpointSchedule(every_epochs=10, every_minutes=30, clock=lambda: now[0])
    assert not schedule.due_by_time() and not schedule.due(1, 300)
    now[0] = 31 * 60
    assert schedule.due_by_time() and not schedule.due(2, 300)  # at the next step, not at an epoch's end
    schedule.saved()
    assert not schedule.due_by_time() and schedule.due(10, 300)
    assert not schedule.due(300, 300)  # the metrics file follows
    now[0] = 100 * 60
    assert not CheckpointSchedule(0, 0, clock=lambda: now[0]).due_by_time()


def _no_cuda(monkeypatch, driver: str | None = "550.54.15"):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devmod, "driver_version", lambda: driver)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    for var in devmod.SLURM_GPU_LISTS + devmod.SLURM_GPU_COUNTS + ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID"):
        monkeypatch.delenv(var, raising=False)


def test_a_job_given_a_gpu_without_usable_cuda_stops_naming_the_driver(monkeypatch):
    _no_cuda(monkeypatch, driver="550.54.15")
    monkeypatch.setenv("SLURM_JOB_GPUS", "0")
    with pytest.raises(devmod.DeviceError) as exc:
        devmod.pick_device("auto", log=None)
    msg = str(exc.value)
    assert "\n" not in msg and "SLURM_JOB_GPUS=0" in msg
    assert "driver 550.54.15 is older than" in msg and ">= 580" in msg and "whl/cu126" in msg
    with pytest.raises(devmod.DeviceError, match="compute.device: cuda"):
        devmod.pick_device("cuda", log=None)


def test_a_job_whose_gpu_is_not_visible_says_so(monkeypatch):
    _no_cuda(monkeypatch, driver=None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234")
    with pytest.raises(devmod.DeviceError, match="no NVIDIA GPU is visible to this job .*CUDA_VISIBLE_DEVICES=GPU-1234"):
        devmod.pick_device("auto", log=None)


def test_auto_without_an_assigned_gpu_trains_on_the_cpu_and_says_so(monkeypatch, capsys):
    _no_cuda(monkeypatch)
    assert devmod.pick_device("auto", log=sys.stderr) == torch.device("cpu")
    assert "training on the CPU" in capsys.readouterr().err
    monkeypatch.setenv("SLURM_GPUS_ON_NODE", "0")  # a count of zero is no GPU
    assert devmod.pick_device("auto", log=None) == torch.device("cpu")


def _fake_gpus(monkeypatch, count: int):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "Fake H200")
    monkeypatch.setattr(devmod, "configure_determinism", lambda d: None)
    for var in devmod.SLURM_GPU_LISTS + devmod.SLURM_GPU_COUNTS + ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID"):
        monkeypatch.delenv(var, raising=False)


def test_local_jobs_each_take_their_own_gpu(monkeypatch, tmp_path, capsys):
    """Two GPUs, no scheduler: a job in another process holds GPU 0, so this one takes GPU 1 and logs it."""
    _fake_gpus(monkeypatch, 2)
    monkeypatch.setenv("INITMEM_GPU_SLOTS", str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; fh = open(sys.argv[1], 'a'); fcntl.flock(fh, fcntl.LOCK_EX); print('held', flush=True); "
        "time.sleep(60)"), str(tmp_path / "gpu0.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert devmod.pick_device("auto", log=sys.stderr) == torch.device("cuda:1")
        assert "training on cuda:1 (Fake H200" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()


def test_under_slurm_the_job_trusts_its_gpu_and_warns_when_it_sees_more(monkeypatch, capsys):
    _fake_gpus(monkeypatch, 4)
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert devmod.pick_device("cuda", log=sys.stderr) == torch.device("cuda:0")
    err = capsys.readouterr().err
    assert "WARNING: this job sees 4 GPUs" in err and "trains on one" in err


def test_records_say_which_device_and_numerics_they_ran_with(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    env = devmod.device_environment(torch.device("cpu"))
    assert {"host", "cuda_visible_devices", "torch_cuda", "tf32_matmul", "tf32_cudnn", "determinism"} <= set(env)


def test_every_record_says_where_and_how_it_was_computed(tiny_splits, monkeypatch):
    from conftest import tiny_spec

    from initmem.pipeline.jobs import train_pack

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    runs = [{"run_id": f"r{s}", "spec": tiny_spec(sigma_w=s, epochs=1)} for s in (0.5, 2.0)]
    for engine in ("vmap", "loop"):
        records = train_pack(runs, tiny_splits, TrainSettings(device="cpu", engine=engine), log=None)
        env = records[0]["env"]
        assert env["slurm_job_id"] == "4242" and env["tf32_matmul"] is False and env["determinism"].startswith("cpu")
        assert env["device"].startswith("cpu") and env["engine"] == ("vmap" if engine == "vmap" else "loop")


def _winograd_f4x4_3x3(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A 3x3, padding-1 convolution by Winograd F(4x4, 3x3) (Lavin & Gray's transforms, as cuDNN's
    non-fused Winograd), computed in the inputs' dtype: the float32 algorithm with the largest rounding error."""
    bt = torch.tensor([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                       [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], dtype=x.dtype)
    g = torch.tensor([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                      [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], dtype=x.dtype)
    at = torch.tensor([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], dtype=x.dtype)
    n, _, h, _ = x.shape
    tiles = torch.nn.functional.pad(x, (1, 1, 1, 1)).unfold(2, 6, 4).unfold(3, 6, 4)  # n, c, th, tw, 6, 6
    v = torch.einsum("ai,nctuij,bj->nctuab", bt, tiles, bt)
    u = torch.einsum("ai,kcij,bj->kcab", g, w, g)
    m = torch.einsum("nctuab,kcab->nktuab", v, u)
    y = torch.einsum("ia,nktuab,jb->nktuij", at, m, at)  # n, k, th, tw, 4, 4
    return y.permute(0, 1, 2, 4, 3, 5).reshape(n, w.shape[0], h, h)


@pytest.mark.parametrize("precision", ["tf32", "float32", "bf16"])
def test_every_tf32_flag_torch_and_inductor_read_agrees_with_the_precision(precision):
    """PyTorch raises on reading a legacy TF32 flag the new fp32_precision API contradicts, and
    TorchInductor reads both (its autotuner torch.get_float32_matmul_precision, its convolution
    templates cuDNN's fp32_precision): after set_precision every reader answers, and the same."""
    from initmem.engine.compute import set_precision

    on = precision == "tf32"
    try:
        set_precision(precision)
        assert torch.backends.cuda.matmul.allow_tf32 is on and torch.backends.cudnn.allow_tf32 is on
        assert torch.get_float32_matmul_precision() == ("high" if on else "highest")
        new_api = (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.fp32_precision,
                   torch.backends.cudnn.conv.fp32_precision)
        assert new_api == (("tf32",) * 3 if on else ("ieee",) * 3)
        env = devmod.device_environment(torch.device("cpu"))
        assert env["tf32_matmul"] is on and env["tf32_cudnn"] is on
    finally:
        set_precision("float32")


def test_the_tf32_check_tells_a_float32_winograd_conv_from_tf32_and_covers_a_matmul():
    """TF32 keeps 10 mantissa bits, float32 23: the check's threshold (a quarter of the emulated TF32
    error) lies above a float32 Winograd convolution's rounding and below TF32's, for a conv and a matmul."""
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(2, 8, 16, 16, generator=g, dtype=torch.float64), torch.randn(4, 8, 3, 3, generator=g, dtype=torch.float64)
    assert torch.allclose(_winograd_f4x4_3x3(x, w), torch.nn.functional.conv2d(x, w, padding=1), atol=1e-10)  # the transforms are right
    results = devmod.tf32_check(torch.device("cpu"), conv=_winograd_f4x4_3x3)
    assert [r["op"].split()[0] for r in results] == ["conv", "matmul"]
    conv, matmul = results
    assert conv["off"] > 1e-6 and conv["off_ok"]  # Winograd's float32 error, well above a direct conv's, is float32
    for r in results:
        assert r["off_ok"] and r["on_is_tf32"] is None  # on the CPU TF32 does not exist
        assert r["tf32_expected"] > 10 * r["off"] and r["threshold"] > 3 * r["off"]
    # what TF32 hardware gives: inputs rounded (the emulation) or truncated to 10 bits, both above the line
    truncated = lambda t: (t.contiguous().view(torch.int32) & ~((1 << devmod.TF32_DROPPED_BITS) - 1)).view(torch.float32)
    xs, ws = torch.randn(16, 128, 16, 16, generator=g), torch.randn(128, 128, 3, 3, generator=g) / 34
    ref = torch.nn.functional.conv2d(xs.double(), ws.double(), padding=1)
    for rounding in (devmod.round_to_tf32, truncated):
        err = float((torch.nn.functional.conv2d(rounding(xs).double(), rounding(ws).double(), padding=1) - ref).norm() / ref.norm())
        assert err > conv["threshold"]
    assert "TF32 off works" in devmod.tf32_summary(results)


_FREED_RSS = """
import sys, torch
from initmem.engine.allocator import keep_freed_host_memory
def rss_mib():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
applied = keep_freed_host_memory() if sys.argv[1] == "kept" else None
before = rss_mib()
block = torch.ones(64 << 20, dtype=torch.uint8)  # 64 MiB, touched
del block
print(applied, rss_mib() - before)
"""


@pytest.mark.parametrize("mode", ["glibc", "kept"])
def test_a_training_process_keeps_the_memory_it_frees(mode):
    """A 64 MiB block freed: glibc's defaults hand it back to the kernel (the next step faults it in
    afresh); after keep_freed_host_memory the process keeps it for reuse."""
    out = subprocess.run([sys.executable, "-c", _FREED_RSS, mode], capture_output=True, text=True, check=True).stdout.split()
    kept_mib = float(out[1])
    if mode == "kept":
        assert out[0] == "True" and kept_mib > 60
    else:
        assert kept_mib < 4


def test_keeping_freed_memory_is_a_no_op_without_glibc(monkeypatch):
    from initmem.engine import allocator

    monkeypatch.setattr(allocator.ctypes.util, "find_library", lambda name: None)
    assert allocator.keep_freed_host_memory() is False


@pytest.mark.parametrize("picked, kept", [("cpu", True), ("cuda", False)])
def test_a_training_job_on_the_cpu_keeps_freed_memory(monkeypatch, picked, kept):
    """A pack trained on the CPU turns it on once its device is picked; one on a GPU, whose steps'
    tensors live in GPU memory, leaves the allocator as it is (moving the data stops it after that)."""
    from initmem.pipeline import jobs

    calls = []
    monkeypatch.setattr(jobs, "keep_freed_host_memory", lambda: calls.append(True) or True)
    monkeypatch.setattr(jobs, "pick_device", lambda name, log: torch.device(picked))
    monkeypatch.setattr(jobs.Tensors, "from_splits", lambda splits, dev, final=None: (_ for _ in ()).throw(RuntimeError("stop here")))
    with pytest.raises(RuntimeError, match="stop here"):
        jobs.train_pack([], None, TrainSettings(device="auto"))
    assert calls == ([True] if kept else [])
