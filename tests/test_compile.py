"""``compute.compile``: torch.compile'd forward/backward passes train the same runs as eager mode.

Inductor fuses and reorders the normalisation arithmetic, so float32 results agree to rounding
amplified by training, not bit for bit: within 1e-3 relative after 2 epochs here (measured: 2.5e-7 for
a single run, 1.6e-4 for a pack; eager packs vs single runs: <1e-4). A missing BatchNorm update or a
mixed-up pack member would be off by percents. Each test compiles a few graphs (train, last partial
batch, evaluation; for packs also the smaller pack): seconds to tens of seconds on CPU.
"""

from __future__ import annotations

import io
import re

import pytest
import torch._dynamo
from helpers.packs import assert_same_records, pack_runs

from initmem.engine.packed import train_packed
from initmem.engine.settings import TrainSettings
from initmem.engine.train import train_run

# torch.compile on the CPU costs seconds a test: the full suite's, not the edit-test loop's
pytestmark = [pytest.mark.slow, pytest.mark.workflow]

RTOL = 1e-3


def _compiled_graphs() -> int:
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def test_compiled_single_run_matches_eager(tiny_tensors):
    spec = pack_runs(sigmas=(1.0,), seeds=(0,), augment=True, batch_size=40, l2=1e-3, lr=0.01)[0]["spec"]  # partial last batch
    eager = train_run(spec, tiny_tensors, "r0", log=None)
    before = _compiled_graphs()
    compiled = train_run(spec, tiny_tensors, "r0", settings=TrainSettings(compile=True), log=None)
    assert _compiled_graphs() > before  # it really ran compiled
    assert (compiled["env"]["compile"], eager["env"]["compile"]) == (True, False)
    assert_same_records([compiled], [eager], rtol=RTOL)


def test_a_compiled_pack_matches_eager_and_a_diverging_member_does_not_recompile_it(tiny_tensors):
    """Masked, not removed: a pack where a member diverges in epoch 1 compiles exactly the graphs of a
    pack where none does (removing it used to recompile every graph for the smaller pack), and trains
    the same records as eager mode."""
    compiled = []
    for sigmas in ((1.0, 2.0, 0.5), (1.0, 1e30, 0.5)):
        torch._dynamo.reset()
        before = _compiled_graphs()
        records = train_packed(pack_runs(sigmas=sigmas, lr=0.01), tiny_tensors, settings=TrainSettings(compile=True), log=None)
        compiled.append(_compiled_graphs() - before)
    assert [r["status"] for r in records] == ["ok", "diverged", "ok"] and all(r["env"]["compile"] for r in records)
    assert compiled[1] == compiled[0] > 0
    assert_same_records(records, train_packed(pack_runs(sigmas=(1.0, 1e30, 0.5), lr=0.01), tiny_tensors, log=None), rtol=RTOL)


class EpochLog(io.StringIO):
    """A trainer's log that notes how many graphs had been compiled at the end of each epoch, and
    can request a SIGTERM stop there (the trainer checkpoints after the next step and raises)."""

    def __init__(self, stop_after_epoch: int | None = None, request=None):
        super().__init__()
        self.graphs: list[int] = []
        self.stop_after_epoch, self.request = stop_after_epoch, request

    def write(self, text: str) -> int:
        if (m := re.search(r"epoch (\d+)/", text)) is not None:
            self.graphs.append(_compiled_graphs())
            if int(m.group(1)) == self.stop_after_epoch:
                self.request()
        return super().write(text)


# Adam only: its step count and moment slots change every step (what could force a recompile); SGD has neither
@pytest.mark.parametrize("optimizer, lr", [("adam", 1e-3)])
def test_compiled_step_matches_eager_and_compiles_only_in_the_first_epoch(tiny_tensors, optimizer, lr):
    """``compile: step``: forward, loss, backward and the optimizer's update compiled; the cosine rate
    (and Adam's step count) change every step without a recompile: the graphs after epoch 3 are those after epoch 1."""
    spec = pack_runs(sigmas=(1.0,), seeds=(0,), augment=True, batch_size=40, l2=1e-3, lr=lr, optimizer=optimizer, epochs=3)[0]["spec"]
    eager = train_run(spec, tiny_tensors, "r0", log=None)
    torch._dynamo.reset()
    before, log = _compiled_graphs(), EpochLog()
    compiled = train_run(spec, tiny_tensors, "r0", settings=TrainSettings(compile="step"), log=log)
    assert log.graphs[0] > before and log.graphs == [log.graphs[0]] * 3
    assert compiled["env"]["compile"] == "step"
    assert_same_records([compiled], [eager], rtol=RTOL)


@pytest.mark.parametrize("optimizer, lr", [("adam", 1e-3)])
def test_compiled_pack_step_matches_eager_and_a_diverging_member_does_not_recompile(tiny_tensors, optimizer, lr):
    """The masked pack update compiled: the second member diverges in epoch 1 and is masked from
    epoch 2 on, in the same graphs (the mask is a tensor from the start)."""
    runs = pack_runs(sigmas=(1.0, 1e30, 0.5), lr=lr, optimizer=optimizer, epochs=3)
    eager = train_packed(runs, tiny_tensors, log=None)
    torch._dynamo.reset()
    before, log = _compiled_graphs(), EpochLog()
    compiled = train_packed(runs, tiny_tensors, settings=TrainSettings(compile="step"), log=log)
    assert [r["status"] for r in compiled] == ["ok", "diverged", "ok"]
    assert log.graphs[0] > before and log.graphs == [log.graphs[0]] * 3
    assert_same_records(compiled, eager, rtol=RTOL)


def test_compiled_pack_step_resumes_from_a_mid_epoch_checkpoint(tmp_path, tiny_tensors, stop_request):
    """SIGTERM after epoch 1 (a member diverged and is masked): the checkpoint written one step into
    epoch 2 resumes compiled to the records of an uninterrupted eager pack (running sums, mask, Adam's step count)."""
    runs = pack_runs(sigmas=(1.0, 1e30, 0.5), lr=1e-3, optimizer="adam", epochs=3)
    eager = train_packed(runs, tiny_tensors, log=None)
    ckpt = tmp_path / "pack.ckpt"
    with stop_request.stops("epoch 1 step 1"):
        train_packed(runs, tiny_tensors, settings=TrainSettings(compile="step"), checkpoint=ckpt, log=EpochLog(stop_after_epoch=1, request=stop_request.request))
    resumed = train_packed(runs, tiny_tensors, settings=TrainSettings(compile="step"), checkpoint=ckpt, log=None)
    assert [r["status"] for r in resumed] == ["ok", "diverged", "ok"]
    assert_same_records(resumed, eager, rtol=RTOL)


def test_unknown_compile_setting_is_refused(tiny_tensors):
    with pytest.raises(ValueError, match="unknown compute.compile 'graph'; choose false, true"):
        train_run(pack_runs(sigmas=(1.0,), seeds=(0,))[0]["spec"], tiny_tensors, "r0", settings=TrainSettings(compile="graph"), log=None)
