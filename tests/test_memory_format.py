"""``compute.memory_format``: channels_last (NHWC) kernels and images train the same runs as the
default NCHW layout, within float32 rounding (only the convolution algorithms differ), for single runs
and vectorised packs, and a checkpoint written in one layout resumes in the other."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_config
from helpers.packs import assert_same_records, pack_runs

from initmem.engine.compute import Layout
from initmem.engine.packed import Pack, train_packed
from initmem.engine.settings import TrainSettings
from initmem.engine.train import train_run


def test_channels_last_lays_out_a_packs_kernels_and_images_as_nhwc_for_its_grouped_convolution():
    layout = Layout("channels_last")
    kernels = layout.stacked_kernels({"w": torch.randn(3, 8, 4, 3, 3, requires_grad=True), "b": torch.randn(3, 8)})
    w = kernels["w"]
    assert w.is_leaf and w.requires_grad and w.flatten(0, 1).is_contiguous(memory_format=torch.channels_last)
    batch = layout.batch(torch.randn(3, 5, 4, 6, 6))
    assert batch.permute(1, 0, 2, 3, 4).flatten(1, 2).is_contiguous(memory_format=torch.channels_last)
    assert layout.batch(torch.randn(5, 4, 6, 6)).is_contiguous(memory_format=torch.channels_last)
    with pytest.raises(ValueError, match="unknown compute.memory_format 'nhwc'"):
        Layout("nhwc")


def test_each_layout_computes_the_float64_forward_to_float32_rounding(tiny_tensors):
    """The layouts differ only in the convolution algorithms' rounding: both training-mode forward
    passes of a ResNet-9 agree with the float64 one to ~1e-6 (measured: NCHW 4.5e-7, NHWC 3.4e-6
    relative to the largest logit, oneDNN, CPU); a kernel or image laid out wrongly is off by O(1)."""
    from initmem.engine.models import build_model, init_weights

    model = build_model("resnet9", 4)
    init_weights(model, 0.5, torch.Generator().manual_seed(0))
    x = tiny_tensors.x_train[:40]
    exact = build_model("resnet9", 4).double()
    exact.load_state_dict(model.state_dict())
    want = exact.train()(x.double())
    for memory_format in ("contiguous", "channels_last"):
        layout = Layout(memory_format)
        net = build_model("resnet9", 4)
        net.load_state_dict(model.state_dict())
        got = layout.module(net).train()(layout.batch(x))
        assert ((got - want).abs().max() / want.abs().max()).item() < 2e-5, memory_format


# Two convolution algorithms round differently and training amplifies it, more at this tiny scale
# (96 images, width 4) than at the paper's: measured on this CPU (oneDNN), channels_last against NCHW
# after one epoch <= 8e-5 relative for single runs and <= 5.7e-4 for packs (vmap's grouped
# convolution), after two epochs up to 3.4e-3 (sigma_w 0.5). A wrong layout is off by O(1), a
# missing statistic update by percents.
RTOL = 5e-3


@pytest.mark.parametrize("overrides", [
    dict(optimizer="sgd", lr=0.01, augment=True, l2=1e-3, batch_size=40),  # BN, augmentation, L2, partial last batch
    dict(optimizer="muon", lr=1e-3, batch_size=40),                        # Newton-Schulz on the dense kernels
])
def test_channels_last_trains_the_same_records(tiny_tensors, overrides):
    runs = pack_runs(epochs=1, **overrides)
    nchw = train_run(runs[0]["spec"], tiny_tensors, "r0", log=None)
    nhwc = train_run(runs[0]["spec"], tiny_tensors, "r0", settings=TrainSettings(memory_format="channels_last"), log=None)
    assert (nchw["env"]["memory_format"], nhwc["env"]["memory_format"]) == ("contiguous", "channels_last")
    assert_same_records([nhwc], [nchw], rtol=RTOL)
    assert_same_records(train_packed(runs, tiny_tensors, settings=TrainSettings(memory_format="channels_last"), log=None),
                        train_packed(runs, tiny_tensors, log=None), rtol=RTOL)


def test_a_packs_kernels_really_are_channels_last(tiny_tensors):
    specs = [r["spec"] for r in pack_runs()]
    gens = [torch.Generator().manual_seed(i) for i in range(3)]
    pack = Pack(specs, gens, torch.device("cpu"), "float32", False, None, memory_format="channels_last")
    convs = [t for t in pack.model.params.values() if t.dim() == 5]
    assert convs and all(t.flatten(0, 1).is_contiguous(memory_format=torch.channels_last) for t in convs)
    assert all(t.flatten(0, 1).is_contiguous(memory_format=torch.channels_last) for t in pack.opt.params if t.dim() == 5)


class StopAfterEpochOne:
    """A trainer's log that calls ``request`` (a stop request) when epoch 1 ends (the trainer checkpoints after the next step)."""

    def __init__(self, request):
        self.request = request

    def write(self, text: str) -> int:
        if "epoch 1/" in text:
            self.request()
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("first, second", [("contiguous", "channels_last"), ("channels_last", "contiguous")])
def test_a_checkpoint_resumes_in_the_other_layout(tmp_path, tiny_tensors, first, second, stop_request):
    runs = pack_runs(optimizer="adam", lr=1e-3)
    reference = train_packed(runs, tiny_tensors, settings=TrainSettings(memory_format=second), log=None)
    ckpt = tmp_path / "pack.ckpt"
    with stop_request.stops():
        train_packed(runs, tiny_tensors, checkpoint=ckpt, settings=TrainSettings(memory_format=first), log=StopAfterEpochOne(stop_request.request))
    resumed = train_packed(runs, tiny_tensors, checkpoint=ckpt, settings=TrainSettings(memory_format=second), log=None)
    assert_same_records(resumed, reference, rtol=RTOL)
    assert [r["history"]["epoch"] for r in resumed] == [[1, 2]] * 3


def test_the_schema_knows_both_layouts():
    """compute.memory_format is checked by the schema (that it retrains nothing: tests/test_reruns.py)."""
    from initmem.pipeline.configfiles import check_schema
    from initmem.spec import ConfigError

    config = tiny_config({"main": {"grid": {"sigma_w": [1.0], "seed": [0]}}})
    for memory_format in ("contiguous", "channels_last"):
        check_schema({**config, "compute": {**config["compute"], "memory_format": memory_format}}, "config/schema.yaml")
    with pytest.raises(ConfigError, match="memory_format"):
        check_schema({**config, "compute": {**config["compute"], "memory_format": "nhwc"}}, "config/schema.yaml")
