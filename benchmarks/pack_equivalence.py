"""How far a vectorised pack's metrics are from the same runs trained alone (float rounding only),
how far compiled runs and packs (``compute.compile``) are from eager ones, and how accurate a first
step is against float64, pack and single run alike.

usage: PYTHONPATH=workflow python benchmarks/pack_equivalence.py   (CPU, 1 thread, 1-2 minutes)
Setting: synthetic data, 96/48/48 images, ResNet-9 width 4, 2 epochs, 3 runs per pack (as tests/test_packed.py).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from initmem.engine.data import build_splits
from initmem.engine.models import build_model, init_weights
from initmem.engine.packed import PackedModel, train_packed
from initmem.engine.settings import TrainSettings
from initmem.engine.streams import Tensors
from initmem.engine.train import train_run
from initmem.spec import resolve_spec

KEYS = ("train_loss", "val_loss", "test_loss", "kernel_norm")
CASES = [
    ("SGD, BN, augment, L2", dict(optimizer="sgd", lr=0.01, augment=True, l2=1e-3, batch_size=40)),
    ("SGD momentum, LN, avg pool", dict(optimizer="sgd_momentum", lr=0.01, norm="layernorm", pool="avg")),
    ("Adam, LN, augment", dict(optimizer="adam", lr=1e-3, norm="layernorm", augment=True)),
    ("AdamW, LN", dict(optimizer="adamw", lr=1e-3, norm="layernorm")),
    ("Muon, LN", dict(optimizer="muon", lr=1e-3, norm="layernorm", batch_size=40)),
    ("full Muon, LN", dict(optimizer="muon_full", lr=1e-3, norm="layernorm")),
    ("Adam, BN (bias before BN)", dict(optimizer="adam", lr=1e-3)),
]


BASE = dict(arch="resnet9", width=4, norm="batchnorm", pool="max", optimizer="sgd", lr=0.05, schedule="cosine",
            alpha=0.01, epochs=2, batch_size=32, l2=0.0, weight_decay=None, momentum=None, augment=False,
            patience=None, sigma_w=1.0, seed=0, variant=None, n_train=96, n_val=48, n_test=48)  # tests' tiny_spec


def spec(**overrides) -> dict:
    return resolve_spec(BASE | overrides)


def max_relative_difference(packed: list[dict], single: list[dict], key: str) -> float:
    return max(abs(a - b) / max(abs(b), 1e-12) for p, s in zip(packed, single, strict=True)
               for a, b in zip(p["history"][key], s["history"][key], strict=True))


def first_step_errors(arch: str, width: int, sigma: float) -> tuple[float, float]:
    """Relative error (norm over all gradients with a non-zero exact value) against float64, single and pack."""
    torch.manual_seed(0)
    x, y = torch.rand(24, 3, 32, 32), torch.randint(0, 10, (24,))
    m = build_model(arch, width)
    init_weights(m, sigma, torch.Generator().manual_seed(0))
    single, exact = copy.deepcopy(m).train(), copy.deepcopy(m).double().train()
    packed = PackedModel([m.train()])
    packed.train()
    F.cross_entropy(single(x), y).backward()
    F.cross_entropy(exact(x.double()), y).backward()
    F.cross_entropy(packed(x[None])[0], y).backward()
    used = [j for j, q in enumerate(exact.parameters()) if float(q.grad.norm()) > 1e-8]
    flat = lambda grads: torch.cat([grads[j].double().flatten() for j in used])
    ref = flat([q.grad for q in exact.parameters()])
    err = lambda grads: float((flat(grads) - ref).norm() / ref.norm())
    return err([p.grad for p in single.parameters()]), err([p.grad[0] for p in packed.params.values()])


def train_run_records(runs: list[dict], data: Tensors, **kwargs) -> list[dict]:
    """The runs trained one by one with the reference trainer."""
    return [train_run(r["spec"], data, r["run_id"], **kwargs) for r in runs]


def main() -> None:
    torch.set_num_threads(1)
    data = Tensors.from_splits(build_splits({"source": "synthetic", "n_train": 96, "n_val": 48, "n_test": 48}),
                               torch.device("cpu"))
    print("# Pack vs single runs: largest relative difference over 3 runs x 2 epochs\n")
    print(f"Command: `PYTHONPATH=workflow python benchmarks/pack_equivalence.py` (torch {torch.__version__}, CPU, 1 thread)\n")
    print("| setting | " + " | ".join(KEYS) + " |\n|---|" + "---:|" * len(KEYS))
    for label, overrides in CASES:
        runs = [{"run_id": f"r{i}", "spec": spec(sigma_w=sw, seed=seed, **overrides)}
                for i, (sw, seed) in enumerate(((0.5, 0), (1.5, 1), (1.0, 3)))]
        packed = train_packed(runs, data, log=None)
        single = train_run_records(runs, data, log=None)
        print(f"| {label} | " + " | ".join(f"{max_relative_difference(packed, single, k):.1e}" for k in KEYS) + " |", flush=True)
    print("\n# Compiled vs eager: largest relative difference over 2 epochs (the settings of tests/test_compile.py)\n")
    print("| setting | " + " | ".join(KEYS) + " |\n|---|" + "---:|" * len(KEYS))
    one = [{"run_id": "r0", "spec": spec(augment=True, batch_size=40, l2=1e-3, lr=0.01)}]
    pack = [{"run_id": f"r{i}", "spec": spec(sigma_w=sw, seed=seed, lr=0.01)}
            for i, (sw, seed) in enumerate(((1.0, 0), (1e30, 1), (0.5, 3)))]  # the second diverges in epoch 1
    for label, runs, trainer in (("single run, SGD, BN, augment, L2", one, train_run_records),
                                 ("pack of 3, SGD, BN, one member diverges", pack, train_packed)):
        eager, compiled = trainer(runs, data, log=None), trainer(runs, data, settings=TrainSettings(compile=True), log=None)
        print(f"| {label} | " + " | ".join(f"{max_relative_difference(compiled, eager, k):.1e}" for k in KEYS) + " |", flush=True)
    print("\n# First-step gradient error against float64 (relative, all gradients with a non-zero exact value)\n")
    print("| model | sigma_w | single run, float32 | pack, float32 |\n|---|---:|---:|---:|")
    for arch, width in (("resnet9", 8), ("resnet56", 16)):
        for sigma in (0.5, 2.0):
            s, p = first_step_errors(arch, width, sigma)
            print(f"| {arch} width {width} | {sigma} | {s:.1e} | {p:.1e} |", flush=True)


if __name__ == "__main__":
    main()
