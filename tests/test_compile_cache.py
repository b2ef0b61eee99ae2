"""Training jobs compile into a shared cache (results/compile_cache/ or $INITMEM_COMPILE_CACHE), not
the node's /tmp, and keep a cache folder the environment already names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from initmem.pipeline.compilecache import compile_cache_environment


def test_jobs_compile_under_the_project_s_results_by_default(tmp_path):
    env = compile_cache_environment({}, tmp_path)
    assert env == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "results" / "compile_cache" / "inductor"),
                   "TRITON_CACHE_DIR": str(tmp_path / "results" / "compile_cache" / "triton")}


def test_a_shared_root_or_a_cache_folder_the_environment_names_is_kept(tmp_path):
    shared = compile_cache_environment({"INITMEM_COMPILE_CACHE": "/scratch/me/torch"}, tmp_path)
    assert shared == {"TORCHINDUCTOR_CACHE_DIR": "/scratch/me/torch/inductor", "TRITON_CACHE_DIR": "/scratch/me/torch/triton"}
    relative = compile_cache_environment({"INITMEM_COMPILE_CACHE": "cache"}, tmp_path)
    assert relative["TRITON_CACHE_DIR"] == str(tmp_path / "cache" / "triton")  # absolute: a job on another node finds it
    own = compile_cache_environment({"TRITON_CACHE_DIR": "/site/triton"}, tmp_path)
    assert own == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "results" / "compile_cache" / "inductor")}


@pytest.mark.slow
@pytest.mark.workflow
def test_torch_compile_writes_its_kernels_into_the_shared_cache(tmp_path):
    """The variables are the ones torch reads: a compiled function's kernels land in the folder, none in /tmp's default."""
    from conftest import ROOT

    env = {**os.environ, **compile_cache_environment({}, tmp_path), "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1"}
    code = "import torch\nf = torch.compile(lambda x: (x * 2).relu().sum())\nprint(float(f(torch.ones(8))))\n"
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "16.0", proc.stderr[-2000:]
    written = [p for p in Path(env["TORCHINDUCTOR_CACHE_DIR"]).rglob("*") if p.is_file()]
    assert written, "torch.compile wrote nothing into TORCHINDUCTOR_CACHE_DIR"
