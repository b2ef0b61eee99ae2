"""Resume on any device, proved on the CPU: every tensor a checkpoint restores reports ``cuda:0`` (as
``torch.load(map_location="cuda")`` puts it) while its data stays on the CPU, and training resumes
through the trainers' own resume path to the records of an uninterrupted run."""

from __future__ import annotations

import dataclasses
import io
import json
import re

import pytest
import torch
from conftest import tiny_spec
from torch.utils._pytree import tree_map

from initmem.engine.packed import train_packed
from initmem.engine.train import train_run


class OnCuda(torch.Tensor):
    """CPU data behind a tensor that reports ``cuda:0``: every operation runs on the CPU data, but
    checks of the device (``Generator.set_state`` wants a CPU ByteTensor) see a GPU tensor."""

    @staticmethod
    def __new__(cls, data: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(cls, data.shape, strides=data.stride(), dtype=data.dtype,
                                                   device=torch.device("cuda", 0), storage_offset=data.storage_offset())

    def __init__(self, data: torch.Tensor):
        self.cpu_data = data

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.cpu_data if isinstance(t, OnCuda) else t
        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))


def _on_cuda(obj):
    """``obj`` with every tensor inside (dicts, lists, tuples, dataclasses) wrapped in :class:`OnCuda`."""
    if isinstance(obj, torch.Tensor):
        return OnCuda(obj)
    if isinstance(obj, dict):
        return {k: _on_cuda(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_on_cuda(v) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            setattr(obj, f.name, _on_cuda(getattr(obj, f.name)))
    return obj


@pytest.fixture
def loads_onto_cuda(monkeypatch):
    """Every ``torch.load`` returns its tensors standing on ``cuda:0``; counts the loads."""
    loads = []
    original = torch.load

    def load(*args, **kwargs):
        loads.append(kwargs.get("map_location"))
        return _on_cuda(original(*args, **kwargs))
    monkeypatch.setattr(torch, "load", load)
    return loads


class StopAfterEpoch(io.StringIO):
    """A trainer's log that requests a stop when epoch ``epoch`` ends (the trainer checkpoints after the next step)."""

    def __init__(self, epoch: int, request):
        super().__init__()
        self.epoch, self.request = epoch, request

    def write(self, text: str) -> int:
        if (m := re.search(r"epoch (\d+)/", text)) is not None and int(m.group(1)) == self.epoch:
            self.request()
        return super().write(text)


def _strip(records: list[dict]) -> str:
    return json.dumps([{k: v for k, v in r.items() if k != "wall_seconds"} for r in records])


def _interrupted(train, ckpt, stop_request) -> None:
    with stop_request.stops("epoch 1 step 1"):
        train(checkpoint=ckpt, log=StopAfterEpoch(1, stop_request.request))


def _pack(sigmas):
    return [{"run_id": f"r{i}", "spec": tiny_spec(sigma_w=s, seed=i, augment=True, optimizer="adam", lr=1e-3, epochs=3)}
            for i, s in enumerate(sigmas)]


@pytest.mark.parametrize("kind", ["single run", "pack", "pack with a masked member"])
def test_a_checkpoint_resumes_with_every_restored_tensor_on_a_gpu(tmp_path, tiny_tensors, loads_onto_cuda, kind, stop_request):
    if kind == "single run":
        spec = tiny_spec(augment=True, optimizer="adam", lr=1e-3, epochs=3)
        train = lambda **kw: [train_run(spec, tiny_tensors, "r0", **kw)]
    else:
        runs = _pack((1.0, 2.0, 0.5) if kind == "pack" else (1.0, 1e30, 0.5))  # 1e30 diverges in epoch 1: masked
        train = lambda **kw: train_packed(runs, tiny_tensors, **kw)
    reference = train(log=None)
    ckpt = tmp_path / "c.ckpt"
    _interrupted(train, ckpt, stop_request)
    assert not loads_onto_cuda
    resumed = train(checkpoint=ckpt, log=None)
    assert len(loads_onto_cuda) == 1  # it really resumed from the checkpoint, with everything "on the GPU"
    if kind == "pack with a masked member":
        assert [r["status"] for r in resumed] == ["ok", "diverged", "ok"]
    assert _strip(resumed) == _strip(reference)
