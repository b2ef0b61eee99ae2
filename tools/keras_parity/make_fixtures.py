"""Write the Keras parity fixtures: Keras 3 itself trains the paper's ResNet-9 (width 4) a few steps
with every optimizer the engine shares with Keras, from one set of initial weights, in float64.

Run by hand, in an environment of its own (Keras is never a dependency of the project)::

    python3 -m venv /work/kerasenv
    /work/kerasenv/bin/pip install keras==3.15.1
    # torch: the project's own (a .pth file puts its site-packages on the path), or `pip install torch`
    echo /path/to/project/.venv/lib/python3.11/site-packages \\
        > /work/kerasenv/lib/python3.11/site-packages/project_torch.pth
    KERAS_BACKEND=torch PYTHONPATH=workflow /work/kerasenv/bin/python tools/keras_parity/make_fixtures.py

It writes ``tests/fixtures/keras/resnet9_w4.npz`` (``tests/test_keras_parity.py`` reads it). The
initial weights come from the engine's sigma_w init (``initmem.engine.models.init_weights``, the only
engine code used here), rounded to float32 values so that both sides start from the same exact
float64 numbers. Keras' weights after the last step are stored as their change from the initial
weights, in float32 (rounding <= 2^-24 of the change, far below the tests' 1e-7); the BatchNorm
moving statistics, the learning rates and the losses in float64. Keras 3.15.1 demotes float64 to
float32 in its type promotion on every backend but TensorFlow's; :func:`keep_float64` makes the torch
backend keep it, as TensorFlow's does, and :func:`check_float64` refuses to write a fixture otherwise.
Running it twice writes the same arrays.

Layouts: Keras conv kernels are (kh, kw, in, out), torch's (out, in, kh, kw); Keras dense kernels
(in, out), torch's (out, in). Everything stored uses the torch (engine) layout and names.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras
import numpy as np
import torch

from initmem.engine.models import build_model, init_weights

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "keras" / "resnet9_w4.npz"
WIDTH, SIGMA_W, INIT_SEED, DATA_SEED = 4, 1.5, 0, 1
STEPS, BATCH, SIZE, CLASSES = 3, 8, 16, 10
ALPHA = 0.1  # cosine schedule floor, as a fraction of lr0; decay over the STEPS steps (one epoch)
BN_MOMENTUM, BN_EPS = 0.99, 1e-3

# name -> (engine optimizer, lr0, decoupled weight decay, momentum, l2): Keras' own arguments follow in make_optimizer
CASES = {
    "sgd": ("sgd", 0.05, 0.0, 0.0, 0.0),
    "sgd_momentum": ("sgd_momentum", 0.05, 0.0, 0.9, 0.0),
    "sgd_momentum_l2": ("sgd_momentum", 0.05, 0.0, 0.9, 0.01),
    "adam": ("adam", 0.01, 0.0, 0.0, 0.0),
    "adamw": ("adamw", 0.01, 1e-4, 0.0, 0.0),
    "muon": ("muon", 0.01, 1e-4, 0.95, 0.0),
    "lion": ("lion", 0.001, 0.0, 0.0, 0.0),
    "lion_wd": ("lion", 0.001, 0.1, 0.0, 0.0),
}


def make_optimizer(name: str, lr: keras.optimizers.schedules.LearningRateSchedule) -> keras.optimizers.Optimizer:
    """The Keras optimizer of a case (Keras defaults wherever the engine follows them)."""
    kind, _, wd, momentum, _ = CASES[name]
    if kind == "sgd":
        return keras.optimizers.SGD(lr)
    if kind == "sgd_momentum":
        return keras.optimizers.SGD(lr, momentum=momentum)
    if kind == "adam":
        return keras.optimizers.Adam(lr)
    if kind == "adamw":
        return keras.optimizers.AdamW(lr, weight_decay=wd)
    if kind == "muon":  # the paper's decoupled decay on both branches (Keras' default is 0.004)
        return keras.optimizers.Muon(lr, weight_decay=wd, adam_weight_decay=wd, momentum=momentum)
    if kind == "lion":
        return keras.optimizers.Lion(lr, weight_decay=wd or None)
    raise ValueError(f"no Keras optimizer for case {name!r}")


def keras_name(module: str) -> str:
    """A Keras layer name for an engine module path (the torch backend refuses dots; the engine's paths have no '_')."""
    return module.replace(".", "_")


def module_path(layer: keras.layers.Layer) -> str:
    """The engine module path a Keras layer stands for."""
    return layer.name.replace("_", ".")


def conv_block(x, c: int, name: str, l2: float, pool: bool = False):
    """conv (bias, 'same') -> BatchNorm (0.99, 1e-3) -> ReLU (-> 2x2 max pool); layers named by the engine's modules."""
    reg = keras.regularizers.L2(l2) if l2 else None
    x = keras.layers.Conv2D(c, 3, padding="same", kernel_regularizer=reg, name=keras_name(f"{name}.0"))(x)
    x = keras.layers.BatchNormalization(momentum=BN_MOMENTUM, epsilon=BN_EPS, name=keras_name(f"{name}.1"))(x)
    x = keras.layers.ReLU()(x)
    return keras.layers.MaxPooling2D(2)(x) if pool else x


def residual(x, c: int, name: str, l2: float):
    """x + two conv blocks (the Page/Myrtle residual)."""
    y = conv_block(conv_block(x, c, f"{name}.body.0", l2), c, f"{name}.body.1", l2)
    return keras.layers.Add()([x, y])


def resnet9(width: int, l2: float) -> keras.Model:
    """Page/Myrtle ResNet-9 as the engine builds it: prep w, [2w + pool + res], [4w + pool], [8w + pool + res], global max pool, dense."""
    w = width
    inp = keras.Input((SIZE, SIZE, 3))
    x = conv_block(inp, w, "features.0", l2)
    x = residual(conv_block(x, 2 * w, "features.1", l2, pool=True), 2 * w, "features.2", l2)
    x = conv_block(x, 4 * w, "features.3", l2, pool=True)
    x = residual(conv_block(x, 8 * w, "features.4", l2, pool=True), 8 * w, "features.5", l2)
    x = keras.layers.GlobalMaxPooling2D()(x)
    reg = keras.regularizers.L2(l2) if l2 else None
    return keras.Model(inp, keras.layers.Dense(CLASSES, kernel_regularizer=reg, name="dense")(x))


def to_keras(name: str, a: np.ndarray) -> np.ndarray:
    """An engine (torch-layout) tensor in Keras' layout."""
    if a.ndim == 4:
        return a.transpose(2, 3, 1, 0)  # (out, in, kh, kw) -> (kh, kw, in, out)
    return a.T if a.ndim == 2 else a


def to_torch(a: np.ndarray) -> np.ndarray:
    """A Keras tensor in the engine's (torch) layout."""
    if a.ndim == 4:
        return a.transpose(3, 2, 0, 1)
    return a.T if a.ndim == 2 else a


KERAS_SLOTS = {"Conv2D": ("weight", "bias"), "Dense": ("weight", "bias"),
               "BatchNormalization": ("weight", "bias", "moving_mean", "moving_var")}  # gamma, beta, moving mean, moving variance


def engine_layers(model: keras.Model) -> list[keras.layers.Layer]:
    """The layers that hold weights (named by the engine's module paths)."""
    return [layer for layer in model.layers if type(layer).__name__ in KERAS_SLOTS]


def set_engine_state(model: keras.Model, state: dict[str, np.ndarray]) -> None:
    """Load an engine state dict (torch names and layouts) into the Keras model."""
    for layer in engine_layers(model):
        slots = KERAS_SLOTS[type(layer).__name__]
        layer.set_weights([to_keras(s, state[f"{module_path(layer)}.{s}"]) for s in slots])


def engine_state(model: keras.Model) -> dict[str, np.ndarray]:
    """The Keras model's weights as an engine state dict (torch names and layouts, float64)."""
    out = {}
    for layer in engine_layers(model):
        for s, a in zip(KERAS_SLOTS[type(layer).__name__], layer.get_weights(), strict=True):
            out[f"{module_path(layer)}.{s}"] = to_torch(np.asarray(a, dtype=np.float64))
    return out


def initial_state() -> dict[str, np.ndarray]:
    """The engine's sigma_w init of ResNet-9 width 4, rounded to float32 values (exact in float64)."""
    engine = build_model("resnet9", WIDTH).double()
    init_weights(engine, SIGMA_W, torch.Generator().manual_seed(INIT_SEED))
    return {k: v.numpy().astype(np.float32).astype(np.float64) for k, v in engine.state_dict().items()}


def train_case(name: str, init: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Keras trains one case for STEPS steps (``train_on_batch``, training mode); its lrs, losses and end state."""
    keras.backend.clear_session()
    l2 = CASES[name][4]
    model = resnet9(WIDTH, l2)
    set_engine_state(model, init)
    schedule = keras.optimizers.schedules.CosineDecay(CASES[name][1], decay_steps=STEPS, alpha=ALPHA)
    opt = make_optimizer(name, schedule)
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    lrs, losses = [], []
    for k in range(STEPS):
        xb = (x[k].astype(np.float64) / 255.0).transpose(0, 2, 3, 1)  # NCHW uint8 -> NHWC in [0, 1]
        if k == 0:
            check_float64(model, xb, y[k].astype(np.int64))
        model.reset_metrics()  # train_on_batch's loss is a running mean over calls otherwise
        lrs.append(float(schedule(k)))
        logs = model.train_on_batch(xb, y[k].astype(np.int64), return_dict=True)
        losses.append(float(logs["loss"]))
    if int(opt.iterations) != STEPS:
        raise RuntimeError(f"{name}: Keras took {int(opt.iterations)} steps, expected {STEPS}")
    return {"lr": np.array(lrs), "loss": np.array(losses), "state": engine_state(model)}


def keep_float64() -> None:
    """Let Keras' type promotion keep float64 on the torch backend, as it does on TensorFlow's.

    Keras 3.15.1 demotes every ``result_type`` of float64 to float32 except on the TensorFlow backend
    (``BIT64_TO_BIT32_DTYPE``; keras-team/keras#23223), so under ``floatx`` float64 its BatchNormalization,
    ``ops.matmul`` (Dense) and the cross-entropy compute in float32 on the torch backend, 1e-7 apart
    from float64. The TensorFlow backend (the paper's) keeps float64; this one entry makes the torch
    backend do the same. No formula changes, only the dtype the ops compute in.
    """
    from keras.src.backend.common import dtypes
    dtypes.BIT64_TO_BIT32_DTYPE["float64"] = "float64"
    if keras.backend.result_type("float64", "float32") != "float64":
        raise RuntimeError("this Keras still demotes float64; the fixtures would not be float64")


def check_float64(model: keras.Model, x: np.ndarray, y: np.ndarray) -> None:
    """Every layer's output (inference mode: no statistics change) and the loss are float64."""
    for layer in model.layers[1:]:
        out = keras.Model(model.input, layer.output)(x, training=False)
        if str(out.dtype) != "torch.float64":
            raise RuntimeError(f"Keras layer {layer.name} computes in {out.dtype}, not float64")
    loss = model.loss(y, model(x, training=False))
    if str(loss.dtype) != "torch.float64":
        raise RuntimeError(f"Keras' loss computes in {loss.dtype}, not float64")


def main() -> None:
    if keras.backend.backend() != "torch":
        raise SystemExit(f"run with KERAS_BACKEND=torch (got {keras.backend.backend()!r})")
    keras.config.set_floatx("float64")
    keep_float64()
    torch.set_num_threads(1)
    init = initial_state()
    rng = np.random.default_rng(DATA_SEED)
    x = rng.integers(0, 256, (STEPS, BATCH, 3, SIZE, SIZE), dtype=np.uint8)  # images as CIFAR's: k / 255
    y = rng.integers(0, CLASSES, (STEPS, BATCH), dtype=np.uint8)
    arrays = {"x": x, "y": y, **{f"init/{k}": v.astype(np.float32) for k, v in init.items()}}
    storage = 0.0
    for name in CASES:
        out = train_case(name, init, x, y)
        arrays[f"{name}/lr"], arrays[f"{name}/loss"] = out["lr"], out["loss"]
        for key, end in out["state"].items():
            if key.endswith(("moving_mean", "moving_var")):
                arrays[f"{name}/end/{key}"] = end
            else:
                delta = (end - init[key]).astype(np.float32)
                storage = max(storage, float(np.abs(delta.astype(np.float64) + init[key] - end).max()))
                arrays[f"{name}/delta/{key}"] = delta
        print(f"{name}: lr {out['lr']} loss {out['loss']}", file=sys.stderr)
    meta = {"keras": keras.__version__, "backend": keras.backend.backend(), "torch": torch.__version__,
            "floatx": keras.config.floatx(), "width": WIDTH, "sigma_w": SIGMA_W, "init_seed": INIT_SEED,
            "steps": STEPS, "batch": BATCH, "size": SIZE, "schedule": "cosine", "alpha": ALPHA,
            "cases": {n: dict(zip(("optimizer", "lr", "weight_decay", "momentum", "l2"), c, strict=True)) for n, c in CASES.items()},
            "max_storage_rounding": storage}
    arrays["meta"] = np.array(json.dumps(meta))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(OUT)  # atomic
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes); float32 storage of the changes rounds by <= {storage:.2e}", file=sys.stderr)


if __name__ == "__main__":
    main()
