"""``compute.compile``: torch.compile'd forward/backward passes train the same runs as eager mode.

Inductor fuses and reorders the normalisation arithmetic, so float32 results agree to rounding
amplified by training, not bit for bit: within 1e-3 relative after 2 epochs here (measured: 2.5e-7 for
a single run, 1.6e-4 for a pack; eager packs vs single runs: <1e-4). A missing BatchNorm update or a
mixed-up pack member would be off by percents. Each test compiles a few graphs (train, last partial
batch, evaluation; for packs also the smaller pack): seconds to tens of seconds on CPU.
"""

from __future__ import annotations

import torch._dynamo
from test_packed import _runs, assert_same_records

from initmem.engine.packed import train_packed
from initmem.engine.train import train_run

RTOL = 1e-3


def _compiled_graphs() -> int:
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def test_compiled_single_run_matches_eager(tiny_tensors):
    spec = _runs(sigmas=(1.0,), seeds=(0,), augment=True, batch_size=40, l2=1e-3, lr=0.01)[0]["spec"]  # partial last batch
    eager = train_run(spec, tiny_tensors, "r0", log=None)
    before = _compiled_graphs()
    compiled = train_run(spec, tiny_tensors, "r0", compile=True, log=None)
    assert _compiled_graphs() > before  # it really ran compiled
    assert (compiled["env"]["compile"], eager["env"]["compile"]) == (True, False)
    assert_same_records([compiled], [eager], rtol=RTOL)


def test_compiled_pack_matches_eager_also_after_a_member_leaves(tiny_tensors):
    runs = _runs(sigmas=(1.0, 1e30, 0.5), lr=0.01)  # the second diverges in epoch 1: epoch 2 recompiles for 2 models
    eager = train_packed(runs, tiny_tensors, log=None)
    before = _compiled_graphs()
    compiled = train_packed(runs, tiny_tensors, compile=True, log=None)
    assert _compiled_graphs() > before
    assert [r["status"] for r in compiled] == ["ok", "diverged", "ok"]
    assert all(r["env"]["compile"] for r in compiled)
    assert_same_records(compiled, eager, rtol=RTOL)


def test_a_diverging_member_does_not_recompile_the_pack(tiny_tensors):
    """Masked, not removed: a pack where a member diverges in epoch 1 compiles exactly the graphs of a
    pack where none does (removing it used to recompile every graph for the smaller pack)."""
    compiled = []
    for sigmas in ((1.0, 2.0, 0.5), (1.0, 1e30, 0.5)):
        torch._dynamo.reset()
        before = _compiled_graphs()
        records = train_packed(_runs(sigmas=sigmas, lr=0.01), tiny_tensors, compile=True, log=None)
        compiled.append(_compiled_graphs() - before)
    assert [r["status"] for r in records] == ["ok", "diverged", "ok"]
    assert compiled[1] == compiled[0] > 0
