"""Training throughput of packs: images/s per run, runs/hour and achieved TFLOP/s against a
measured matmul peak on the same device, for three ways to train a pack of ResNet-9s:

- loop:    the reference trainer's step, one model after another (``pack.engine: loop``);
- vmap:    the vectorised pack of ``initmem.engine.packed`` (``pack.engine: vmap``), the engine the workflow uses;
- grouped: a hand-written grouped-convolution ResNet-9 (channels of all models side by side, one
           ``groups=N`` conv per layer), forward/backward/SGD only, to check what vmap leaves on the table.

Variants of loop and vmap: ``eager``; ``compile`` (``compute.compile``: torch.compile of the forward
pass, static shapes; the compile time is excluded, it is paid once per shape and job); ``channels_last``
(NHWC activations and kernels; for vmap the stacked tensors are laid out so that the grouped
convolution vmap lowers to sees NHWC; a benchmark-only variant, the trainer does not offer it).

Also prints the activation memory one training image costs (tensors saved for backward, counted on
this device; the same tensors on any device), from which ``pack.max_images`` follows.

usage: python benchmarks/throughput.py [--device cpu|cuda] [--width 64] [--steps 20] [--packs 1 4 16 64]
              [--batches 16 128] [--engines loop vmap grouped] [--precisions float32 tf32 bf16]
              [--variants eager compile channels_last]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from initmem.engine.compute import compile_forward, set_precision
from initmem.engine.models import build_model, init_weights
from initmem.engine.optim import KerasOptimizer
from initmem.engine.packed import PackedModel

EPOCH_IMAGES, EPOCHS = 40_000, 300  # one paper run: 300 epochs of 40,000 training images


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak_tflops(device: torch.device, dtype: torch.dtype, n: int, reps: int = 10) -> float:
    """Measured dense matmul rate (TFLOP/s) on ``device`` in ``dtype`` (TF32 as currently allowed)."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(2):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e12


def train_flops_per_image(width: int) -> float:
    """Forward + backward FLOPs of ResNet-9 for one 32x32 image (3 x forward multiply-adds x 2)."""
    w = width
    convs = [(3, w, 32), (w, 2 * w, 32), (2 * w, 2 * w, 16), (2 * w, 2 * w, 16), (2 * w, 4 * w, 16),
             (4 * w, 8 * w, 8), (8 * w, 8 * w, 4), (8 * w, 8 * w, 4)]
    return 3 * 2 * (sum(cin * cout * 9 * size * size for cin, cout, size in convs) + 8 * w * 10)


def _models(pack: int, width: int, device: torch.device) -> list[torch.nn.Module]:
    models = []
    for i in range(pack):
        m = build_model("resnet9", width)
        init_weights(m, 1.0, torch.Generator().manual_seed(i))
        models.append(m.to(device).train())
    return models


def loop_step(pack: int, width: int, batch: int, device: torch.device, autocast, variant: str = "eager"):
    models = _models(pack, width, device)
    opts = [KerasOptimizer("sgd", list(m.parameters())) for m in models]
    x, y = torch.rand(pack, batch, 3, 32, 32, device=device), torch.randint(0, 10, (pack, batch), device=device)
    if variant == "channels_last":
        models = [m.to(memory_format=torch.channels_last) for m in models]
        x = [xi.contiguous(memory_format=torch.channels_last) for xi in x]
    nets = [compile_forward(m, variant == "compile") for m in models]

    def step() -> None:
        for i, (m, net, opt) in enumerate(zip(models, nets, opts, strict=True)):
            with autocast:
                logits = net(x[i])
            loss = F.cross_entropy(logits.float(), y[i])
            for p in m.parameters():
                p.grad = None
            loss.backward()
            opt.step(1e-3)
    return step


def _stacked_channels_last(t: torch.Tensor) -> torch.Tensor:
    """A (models, out, in, k, k) kernel stack (or (models, images, C, H, W) batch) stored so that the
    (out*models, in, k, k) or (images, models*C, H, W) view vmap's grouped convolution takes is NHWC."""
    if t.dim() != 5:
        return t
    order = (0, 1, 3, 4, 2) if t.requires_grad else (1, 3, 4, 0, 2)
    inverse = [order.index(i) for i in range(5)]
    return t.detach().permute(order).contiguous().permute(inverse).requires_grad_(t.requires_grad)


def vmap_step(pack: int, width: int, batch: int, device: torch.device, autocast, variant: str = "eager"):
    model = PackedModel(_models(pack, width, device))
    model.train()
    if variant == "compile":
        model.compile()
    x, y = torch.rand(pack, batch, 3, 32, 32, device=device), torch.randint(0, 10, (pack, batch), device=device)
    if variant == "channels_last":
        model.params = {k: _stacked_channels_last(v) for k, v in model.params.items()}
        x = _stacked_channels_last(x)
    opt = KerasOptimizer("sgd", list(model.params.values()), stacked=True)

    def step() -> None:
        with autocast:
            logits = model(x)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none").view(pack, -1).mean(1)
        for p in opt.params:
            p.grad = None
        loss.sum().backward()
        opt.step(1e-3)
    return step


def grouped_step(pack: int, width: int, batch: int, device: torch.device, autocast, variant: str = "eager"):
    """ResNet-9 of ``pack`` models as grouped convolutions on (batch, pack*C, H, W); BN over (batch, H, W)."""
    w = width
    shapes = [(3, w), (w, 2 * w), (2 * w, 2 * w), (2 * w, 2 * w), (2 * w, 4 * w), (4 * w, 8 * w), (8 * w, 8 * w), (8 * w, 8 * w)]
    kernels = [(torch.randn(pack * cout, cin, 3, 3, device=device) / (3 * cin**0.5)).requires_grad_() for cin, cout in shapes]
    gammas = [torch.ones(pack * cout, device=device, requires_grad=True) for _, cout in shapes]
    dense = (torch.randn(pack, 8 * w, 10, device=device) / (8 * w) ** 0.5).requires_grad_()
    params = kernels + gammas + [dense]
    x = torch.rand(batch, pack * 3, 32, 32, device=device)
    y = torch.randint(0, 10, (pack, batch), device=device)

    def block(h, i, pool=False):
        h = F.conv2d(h, kernels[i], padding=1, groups=pack)
        mean, var = h.mean((0, 2, 3), keepdim=True), h.var((0, 2, 3), keepdim=True, unbiased=False)
        h = F.relu((h - mean) * torch.rsqrt(var + 1e-3) * gammas[i].view(1, -1, 1, 1))
        return F.max_pool2d(h, 2) if pool else h

    def step() -> None:
        with autocast:
            h = block(x, 0)
            h = block(h, 1, pool=True)
            h = h + block(block(h, 2), 3)
            h = block(h, 4, pool=True)
            h = block(h, 5, pool=True)
            h = h + block(block(h, 6), 7)
            feats = h.amax((2, 3)).view(batch, pack, 8 * w).transpose(0, 1)
            logits = torch.bmm(feats, dense.to(feats.dtype))
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none").view(pack, -1).mean(1).sum()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.sub_(p.grad * 1e-3)
    return step


ENGINES = {"loop": loop_step, "vmap": vmap_step, "grouped": grouped_step}


def images_per_second(engine: str, pack: int, width: int, batch: int, steps: int, device: torch.device, autocast,
                      variant: str = "eager") -> float:
    step = ENGINES[engine](pack, width, batch, device, autocast, variant)
    for _ in range(3):
        step()
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return steps * batch * pack / (time.perf_counter() - start)


def saved_mib_per_image(arch: str, width: int) -> float:
    """MiB of activations autograd keeps for backward per training image: the growth of the saved
    storages from 4 to 12 images per model (so the weights, also saved, do not count)."""
    model = PackedModel([build_model(arch, width) for _ in range(2)])
    model.train()

    def saved_bytes(batch: int) -> int:
        storages: dict[int, int] = {}

        def keep(t: torch.Tensor) -> torch.Tensor:
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
            logits = model(torch.rand(2, batch, 3, 32, 32))
            F.cross_entropy(logits.flatten(0, 1), torch.zeros(2 * batch, dtype=torch.long))
        return sum(storages.values())

    return (saved_bytes(12) - saved_bytes(4)) / (2 * 8) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--packs", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 128])
    parser.add_argument("--engines", nargs="+", default=["loop", "vmap", "grouped"], choices=list(ENGINES))
    parser.add_argument("--precisions", nargs="+", default=["float32"], choices=["float32", "tf32", "bf16"])
    parser.add_argument("--variants", nargs="+", default=["eager"], choices=["eager", "compile", "channels_last"],
                        help="loop and vmap only; grouped runs eager")
    parser.add_argument("--max-images", type=int, default=1 << 30, help="skip pack x batch above this (memory)")
    args = parser.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    n = 2048 if device.type == "cpu" else 8192
    print(f"# Pack throughput: ResNet-9 width {args.width}, SGD, {name}, torch {torch.__version__}\n")
    print(f"Command: `python benchmarks/throughput.py --device {args.device} --width {args.width} --steps {args.steps} "
          f"--packs {' '.join(map(str, args.packs))} --batches {' '.join(map(str, args.batches))} "
          f"--engines {' '.join(args.engines)} --precisions {' '.join(args.precisions)} "
          f"--variants {' '.join(args.variants)}`\n")
    print("| arch | width | activation MiB per training image (saved for backward) |\n|---|---:|---:|")
    for arch in ("resnet9", "resnet56", "resnet110"):
        print(f"| {arch} | 64 | {saved_mib_per_image(arch, 64):.2f} |", flush=True)
    flops = train_flops_per_image(args.width)
    for precision in args.precisions:
        autocast = set_precision(precision)(device)
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        peak = matmul_peak_tflops(device, dtype, n)
        print(f"\n## {precision}: measured {dtype} matmul peak {peak:.2f} TFLOP/s ({n}x{n})\n")
        print("| engine | variant | pack | batch | images/s per job | images/s per run | runs/hour (300 x 40k images) "
              "| x single run | TFLOP/s | % of peak |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for batch in args.batches:
            single = None
            for pack in args.packs:
                for engine, variant in [(e, v) for e in args.engines for v in args.variants]:
                    if pack * batch > args.max_images or (engine == "grouped" and (pack == 1 or variant != "eager")):
                        continue
                    total = images_per_second(engine, pack, args.width, batch, args.steps, device, autocast, variant)
                    if pack == 1 and engine == "loop" and variant == "eager":
                        single = total  # the baseline: one eager run
                    ratio = f"{total / single:.1f}" if single else "-"
                    tflops = total * flops / 1e12
                    print(f"| {engine} | {variant} | {pack} | {batch} | {total:,.0f} | {total / pack:,.0f} | "
                          f"{3600 * total / (EPOCHS * EPOCH_IMAGES):.3f} | {ratio} | {tflops:.3f} | {100 * tflops / peak:.1f} |",
                          flush=True)
    set_precision("float32")


if __name__ == "__main__":
    main()
