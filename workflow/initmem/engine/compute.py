"""How a trainer's steps run on its device: numeric precision, memory layout, ``torch.compile``, and
the tensors a step reads besides its batch. Shared by single runs (:mod:`initmem.engine.train`) and packs
(:mod:`initmem.engine.packed`); none of it changes what a step computes beyond float rounding."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

EVAL_BATCH = 1000  # images per evaluation forward pass (a pack's: models x images, bounded by max_images)
PRECISIONS = ("float32", "tf32", "bf16")
MEMORY_FORMATS = ("contiguous", "channels_last")


def loss_dtype(logits: torch.Tensor) -> torch.Tensor:
    """Logits in at least float32 for the loss: bf16/fp16 autocast outputs go up to float32, a
    float64 model keeps float64 (a float32 loss would put float32 rounding into every gradient)."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


def set_precision(precision: str) -> Callable[[torch.device], contextlib.AbstractContextManager]:
    """Apply ``compute.precision``; returns the autocast context factory for forward passes.

    float32 (default, fidelity): IEEE float32 matmuls and convolutions (TF32 off, also for cuDNN,
    where PyTorch allows it by default). tf32: TensorFloat-32 matmuls/convs on Ampere+ GPUs. bf16:
    bfloat16 autocast of forward passes (cross-entropy, moving statistics and optimizer state stay float32).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
    set_tf32(precision == "tf32")
    if precision == "bf16":
        return lambda device: torch.autocast(device.type, dtype=torch.bfloat16)
    return lambda device: contextlib.nullcontext()


def set_tf32(matmul: bool, cudnn: bool | None = None) -> None:
    """TensorFloat-32 for cuBLAS matmuls and cuDNN convolutions (``cudnn``, default as ``matmul``) on or
    off, through both of PyTorch's APIs at once. PyTorch 2.14 raises on reading a legacy flag (``allow_tf32``,
    ``torch.get_float32_matmul_precision``) that the new ``fp32_precision`` API has set differently, and
    TorchInductor reads both: its autotuner and its convolution backward template the legacy ones, its
    convolution templates ``torch.backends.cudnn.fp32_precision``. Setting the legacy flags first (they
    carry ``cuda.matmul.fp32_precision`` along) and then cuDNN's ``fp32_precision`` leaves every reader
    the same answer (tests/test_device.py)."""
    cudnn = matmul if cudnn is None else cudnn
    torch.backends.cuda.matmul.allow_tf32 = matmul
    torch.backends.cudnn.allow_tf32 = cudnn
    torch.backends.cudnn.fp32_precision = "tf32" if cudnn else "ieee"


def tf32_state() -> dict[str, bool]:
    """Whether TF32 is on for cuBLAS matmuls and for cuDNN convolutions, read through the new API
    (which :func:`set_tf32` keeps equal to the legacy one)."""
    return {"matmul": torch.backends.cuda.matmul.fp32_precision == "tf32",
            "cudnn": torch.backends.cudnn.conv.fp32_precision == "tf32"}


class Layout:
    """``compute.memory_format``: how convolution kernels and images lie in memory. ``contiguous``
    (NCHW, PyTorch's default) or ``channels_last`` (NHWC, what GPU tensor cores prefer). The values
    are the same either way: only the convolution algorithms, hence float rounding, can differ, and a
    checkpoint holds the values (the optimizer's slots per tensor, in its shape), so one written in
    either layout resumes in the other.

    A single run's kernels and batches are 4-D and take PyTorch's ``channels_last``. A vectorised
    pack's are stacked along a leading model axis, and ``vmap`` lowers its convolution to one grouped
    convolution over the (models x out, in, k, k) kernels and the (images, models x C, H, W) batch: a
    kernel stack lies models, out, k, k, in (each model's kernel NHWC), a batch stack images, H, W,
    models, C, so that the grouped convolution's operands are NHWC.
    """

    def __init__(self, memory_format: str = "contiguous"):
        if memory_format not in MEMORY_FORMATS:
            raise ValueError(f"unknown compute.memory_format {memory_format!r}; choose one of {MEMORY_FORMATS}")
        self.channels_last = memory_format == "channels_last"

    def module(self, model: torch.nn.Module) -> torch.nn.Module:
        """A single run's model with its 4-D kernels in this layout (in place; before the optimizer takes them)."""
        return model.to(memory_format=torch.channels_last) if self.channels_last else model

    def stacked_kernels(self, params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A pack's stacked parameters with the (models, out, in, k, k) kernels in this layout, as new leaves."""
        if not self.channels_last:
            return params
        return {k: _relaid(v, (0, 1, 3, 4, 2)).requires_grad_(v.requires_grad) if v.dim() == 5 else v for k, v in params.items()}

    def batch(self, x: torch.Tensor) -> torch.Tensor:
        """Images in this layout: (images, C, H, W), or a pack's stack (models, images, C, H, W)."""
        if not self.channels_last:
            return x
        return x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else _relaid(x, (1, 3, 4, 0, 2))


def _relaid(t: torch.Tensor, order: tuple[int, ...]) -> torch.Tensor:
    """``t``'s values stored with its axes ``order`` from the slowest to the fastest (same shape)."""
    return t.detach().permute(order).contiguous().permute([order.index(i) for i in range(t.dim())])


COMPILE_RECOMPILE_LIMIT = 64  # static shapes: train, last partial batch, evaluation


def check_compile(compile: bool | str) -> None:
    """Raise a clear error for a ``compute.compile`` value other than false, true or step."""
    if not (isinstance(compile, bool) or compile == "step"):
        raise ValueError(f"unknown compute.compile {compile!r}; choose false, true (the forward pass) or step (the whole training step)")


def _raise_recompile_limit() -> None:
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, COMPILE_RECOMPILE_LIMIT)


def compile_forward(fn: Callable, compile: bool) -> Callable:
    """``compute.compile``: the forward pass (a module, or a function of tensors) through
    ``torch.compile`` (TorchInductor fuses the normalisation and activation arithmetic; the backward
    pass is compiled with it). Off: ``fn`` itself.

    Shapes are static: every new shape (the last partial batch, evaluation; packs keep their size)
    compiles once more, which costs seconds to a minute each. Dynamic shapes would avoid that, but
    their symbolic shape analysis of the vectorised convolutions did not finish (torch 2.14, CPU).
    """
    if not compile:
        return fn
    _raise_recompile_limit()
    return torch.compile(fn, dynamic=False)


def compile_step(step: Callable[[torch.Tensor, torch.Tensor], None], compile: bool | str,
                 device: torch.device) -> Callable[[torch.Tensor, torch.Tensor], None]:
    """``compute.compile: step``: the whole training step ``step(x, y)`` (forward, loss, backward,
    optimizer update, running sums) through ``torch.compile``; on CUDA in mode ``reduce-overhead``,
    which replays each graph as a CUDA graph (one launch instead of hundreds of kernels). Any other
    setting: ``step`` itself.

    Everything that changes from step to step must reach the step as a tensor updated in place (the
    learning rate, the optimizer's step count, a pack's mask): a Python number would be a constant
    of the graph and recompile it every step. ``backward()`` is a graph break: Dynamo builds the
    forward and loss as one graph (AOTAutograd compiles its backward with it) and the update as
    another. Autocast (bf16) is resolved while tracing, so every precision is captured. Shapes are
    static as in :func:`compile_forward` (the last partial batch compiles once more).
    """
    if compile != "step":
        return step
    _raise_recompile_limit()
    if device.type != "cuda":
        return torch.compile(step, dynamic=False)
    compiled = torch.compile(step, dynamic=False, mode="reduce-overhead")

    def captured(x: torch.Tensor, y: torch.Tensor) -> None:
        torch.compiler.cudagraph_mark_step_begin()  # a new iteration: the last step's graph outputs are no longer read
        compiled(x, y)
    return captured


def static_inputs(device: torch.device, tensors: list[torch.Tensor]) -> None:
    """On CUDA, tell the compiler that ``tensors`` (what a step updates in place) keep their address,
    so CUDA graphs may mutate them instead of being skipped for mutated inputs."""
    if device.type == "cuda":
        for t in tensors:
            torch._dynamo.mark_static_address(t)


def step_inputs(n: int | None, device: torch.device) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The tensors a step reads besides its batch, kept for the whole run so their addresses stay fixed:
    the learning rate (0-d float64) and the running sums (loss x images, correct, finite; per model when ``n``)."""
    shape = () if n is None else (n,)
    return (torch.zeros((), dtype=torch.float64, device=device),
            {"loss": torch.zeros(shape, dtype=torch.float64, device=device),
             "correct": torch.zeros(shape, dtype=torch.float64, device=device),
             "finite": torch.ones(shape, dtype=torch.bool, device=device)})
