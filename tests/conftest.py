"""Shared fixtures: tiny specs and synthetic data (no torch import at collection time beyond need)."""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_CIFAR = ROOT.parent / "shared" / "cifar10"

# The suite writes nothing outside the checkout and temporary folders: the caches and settings that
# Snakemake (~/.cache/snakemake) and matplotlib (~/.cache, ~/.config/matplotlib) would keep under the
# home folder go to one temporary folder, which every subprocess inherits (torch.compile's cache is
# already under /tmp).
_SCRATCH_HOME = tempfile.mkdtemp(prefix="initmem-tests-")
os.environ.update(XDG_CACHE_HOME=f"{_SCRATCH_HOME}/cache", XDG_CONFIG_HOME=f"{_SCRATCH_HOME}/config",
                  MPLCONFIGDIR=f"{_SCRATCH_HOME}/matplotlib")


def pytest_unconfigure(config):
    shutil.rmtree(_SCRATCH_HOME, ignore_errors=True)


def tiny_spec(**overrides) -> dict:
    """A resolved spec small enough to train in a second on CPU."""
    from initmem.spec import resolve_spec

    return resolve_spec(dict(arch="resnet9", width=4, norm="batchnorm", pool="max", optimizer="sgd", lr=0.05,
                             schedule="cosine", alpha=0.01, epochs=2, batch_size=32, l2=0.0, weight_decay=None,
                             momentum=None, augment=False, patience=None, sigma_w=1.0, seed=0, variant=None,
                             n_train=96, n_val=48, n_test=48) | overrides)


def tiny_config(studies: dict, data: dict | None = None, pack: int = 1, checkpoint_every: int = 0, **defaults) -> dict:
    """A complete workflow config on synthetic data with a width-4 ResNet-9 (overrides as keywords)."""
    base = dict(arch="resnet9", width=4, norm="batchnorm", pool="max", optimizer="sgd", lr=0.01, schedule="cosine",
                alpha=0.01, epochs=2, batch_size=32, l2=0.0, weight_decay=None, momentum=None, augment=False, patience=None)
    return {"data": data or {"source": "synthetic", "n_train": 64, "n_val": 32, "n_test": 32},
            "defaults": {**base, **defaults}, "studies": studies, "pack": {"max_models": pack, "max_images": 4096, "engine": "vmap"},
            "checkpoint": {"every_epochs": checkpoint_every, "keep": False},
            "compute": {"device": "cpu", "threads": 1, "precision": "float32", "compile": False,
                        "images_per_second": 1000}}


def script(path: str) -> ModuleType:
    """A script of the checkout (``tools/``, ``benchmarks/``, an evidence folder's), by its path from the
    repository root, loaded as a fresh module: they are run as files, never installed, and every test
    that reads one loads it this way."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- running Snakemake in a throwaway copy of the workflow (the workflow tests') ---------------------

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake(*args, cwd=ROOT, check=True):
    """Run Snakemake (in ``cwd``: tests pass a :func:`workdir_copy`) and return the finished process."""
    proc = subprocess.run([*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def job_counts(output: str) -> dict:
    """Snakemake's "Job stats" table of ``output``: rule -> jobs."""
    table = output[output.index("Job stats:"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def workdir_copy(tmp_path: Path) -> Path:
    """A throwaway copy of the workflow (Snakefile, workflow/, config/, envs/, profiles/) to run in:
    every test that runs Snakemake runs it in one, never in the checkout, whose results/ and
    .snakemake/ (a user's `make run`) would change what it plans."""
    for name in ("Snakefile", "workflow", "config", "envs", "profiles"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if src.is_dir() else {}))
    return tmp_path


def mark_incomplete(work: Path, path: Path) -> None:
    """What Ctrl-C between a job's last write and Snakemake's bookkeeping leaves in the project ``work``:
    ``path`` (one of its outputs) marked incomplete in ``.snakemake/incomplete``."""
    marker = work / ".snakemake/incomplete" / base64.urlsafe_b64encode(str(path.relative_to(work)).encode()).decode()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text('{"external_jobid": null}')


# The finished tiny pipeline the workflow tests share (tests/test_reruns.py, tests/test_code_identity.py):
# SGD, Adam and Lion packs of 4 runs each on 16x16 synthetic images, one epoch, with its per-study table,
# the clock table and Figures 1 and 9.
TINY_PIPELINE = tiny_config({"main": {"grid": {"optimizer": ["sgd", "adam", "lion"], "batch_size": [16], "sigma_w": [0.5, 2.0],
                                           "seed": [0, 1]}}},
                            data={"source": "synthetic", "n_train": 64, "n_val": 32, "n_test": 32, "resolution": 16},
                            pack=4, epochs=1, width=4, lr=1e-3)
TINY_PIPELINE["pack"]["engine"] = "loop"
# What the fixture builds (and tests/test_code_identity.py dry-runs). Not the default target (`all`, every
# table and figure): its claims table fails on these runs (ZeroDivisionError in the wash-out row, SGD's
# spread 0), which test_reruns.py::test_corrupt_metrics_file_is_named_and_the_printed_repair_works meets
# in its own copy; once that is fixed, building `all` here saves that test its build.
TINY_TARGETS = ("runs", "results/tables/studies/main.runs.csv", "results/tables/clocks.csv", "figures/fig1.pdf", "figures/fig9.pdf")


def session_shared(tmp_path_factory, name: str) -> tuple[Path, Path]:
    """``(folder, lock file)`` that every pytest-xdist worker of this test session shares (keyed by the
    session's ``PYTEST_XDIST_TESTRUNUID``, under the session's temporary root, as pytest-xdist's docs do
    for session fixtures); without xdist, this process's own."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    folder = tmp_path_factory.getbasetemp().parent / f"{name}-{run}" if run else tmp_path_factory.mktemp(name)
    folder.mkdir(exist_ok=True)
    return folder, folder / "lock"


@pytest.fixture(scope="session")
def tiny_pipeline(tmp_path_factory) -> Path:
    """:data:`TINY_PIPELINE` trained once per test session, whatever the number of pytest-xdist workers
    (the first worker to need it builds it under a lock, the others wait and read it; its config in
    ``c.yaml``). Read it, or change a copy of it (:func:`project_copy`), never the fixture itself."""
    import fcntl

    import yaml

    shared, lock = session_shared(tmp_path_factory, "tiny_pipeline")
    work, done = shared / "project", shared / "built"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes (or the worker dies)
        if not done.exists():
            shutil.rmtree(work, ignore_errors=True)  # what a worker whose build failed left
            work.mkdir()
            workdir_copy(work)
            (work / "c.yaml").write_text(yaml.safe_dump(TINY_PIPELINE, sort_keys=False))
            snakemake(*TINY_TARGETS, "--cores", "2", "--configfile", "c.yaml", cwd=work)
            done.touch()
    return work


def project_copy(project: Path, dest: Path) -> Path:
    """A copy of a finished project (mtimes and Snakemake's metadata kept) to change."""
    shutil.copytree(project, dest, symlinks=True)
    return dest


@pytest.fixture(scope="session")
def tiny_splits():
    from initmem.engine.data import build_splits

    return build_splits({"source": "synthetic", "n_train": 96, "n_val": 48, "n_test": 48})


@pytest.fixture(scope="session")
def tiny_tensors(tiny_splits):
    import torch

    from initmem.engine.streams import Tensors

    torch.set_num_threads(1)
    # INITMEM_TEST_DEVICE=cuda runs the trainer tests on a GPU (benchmarks/device_check.sh)
    return Tensors.from_splits(tiny_splits, torch.device(os.environ.get("INITMEM_TEST_DEVICE", "cpu")))


class StopSwitch:
    """The training loop's stop request (:class:`initmem.engine.loop.StopRequest`, what SIGINT and
    SIGTERM set), for a test to set and have cleared: :meth:`request` stops the trainer at its next
    step, as a signal does; :meth:`stops` expects the ``Preempted`` that follows and clears the request."""

    def __init__(self):
        from initmem.engine.loop import StopRequest

        self.flag = StopRequest

    def request(self) -> None:
        self.flag.requested = True

    def clear(self) -> None:
        self.flag.requested = False

    @contextlib.contextmanager
    def after_backward(self, calls: int):
        """Within the block, request the stop at the ``calls``-th backward pass (torch.Tensor.backward restored after)."""
        import torch

        count, original = {"n": 0}, torch.Tensor.backward

        def counting_backward(tensor, *args, **kwargs):
            count["n"] += 1
            if count["n"] == calls:
                self.request()
            return original(tensor, *args, **kwargs)

        torch.Tensor.backward = counting_backward
        try:
            yield
        finally:
            torch.Tensor.backward = original

    @contextlib.contextmanager
    def stops(self, match: str | None = None):
        from initmem.engine.loop import Preempted

        try:
            with pytest.raises(Preempted, match=match) as stopped:
                yield stopped
        finally:
            self.clear()


@pytest.fixture
def stop_request():
    """A :class:`StopSwitch`, cleared after the test whatever it did (no stop request leaks into the next test)."""
    switch = StopSwitch()
    yield switch
    switch.clear()


@pytest.fixture(scope="session")
def cifar_archive(tmp_path_factory) -> Path:
    """The JPEG CIFAR-10 copy packed as cifar-10-python.tar.gz (INITMEM_CIFAR_ARCHIVE reuses a built one)."""
    prebuilt = os.environ.get("INITMEM_CIFAR_ARCHIVE")
    if prebuilt and Path(prebuilt).is_file():
        return Path(prebuilt)
    script = SHARED_CIFAR / "make_archive.py"
    if not script.is_file():
        pytest.skip(f"{script} not found (the shared CIFAR-10 copy is needed for real-data tests)")
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("cifar") / "cifar-10-python.tar.gz"
    subprocess.run([sys.executable, str(script), str(out)], check=True)
    return out


# The heaviest files, whose tests pytest-xdist sends one by one to whichever worker is free (`make test`
# runs --dist loadgroup); every other file runs whole on one worker, its module fixtures once.
SPLIT_FILES = {"test_workflow.py", "test_compile.py"}


@pytest.hookimpl(tryfirst=True)  # before -m selects by the markers and pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Mark every test not marked slow ``unit``; give each test its pytest-xdist group (its file's, or
    none in :data:`SPLIT_FILES`; the real-Slurm tests their own); and order them for the workers: the
    split files' tests first (the longest single tests), then the files with slow tests, then the rest,
    each file's tests together and in their order, and the real-Slurm tests last (they run only with
    INITMEM_TEST_SLURM=1: once Slurm's client tools are installed and its daemons stopped, every
    Snakemake start pays ~9 s of probing by the slurm plugin)."""
    slow_files = {item.path.name for item in items if item.get_closest_marker("slow")}
    for item in items:
        if item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.unit)
        if item.get_closest_marker("xdist_group") is None:
            if item.get_closest_marker("slurm"):
                item.add_marker(pytest.mark.xdist_group("slurm"))
            elif item.path.name not in SPLIT_FILES:
                item.add_marker(pytest.mark.xdist_group(item.path.name))

    def order(item) -> int:
        if item.get_closest_marker("slurm"):
            return 3
        if item.path.name in SPLIT_FILES:
            return 0
        return 1 if item.path.name in slow_files else 2

    items.sort(key=order)


class XdistGroupIds:
    """pytest-xdist 3.8's ``--dist loadgroup`` tells its scheduler each test's group by an ``@group``
    suffix it writes to ``item._nodeid``, which pytest 9.2's structured node ids no longer read
    (pytest-dev/pytest-xdist#1386): the marks are silently ignored and every test is scheduled alone.
    On a worker this writes the suffix where pytest 9.2 reads the id, after xdist's own hook; where
    xdist's suffix took (older pytest, a fixed xdist) it does nothing."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if not getattr(config.option, "loadgroup", False):  # set on pytest-xdist's workers under --dist loadgroup
            return
        for item in items:
            groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")})
            if groups and "@" not in item.nodeid.rpartition("]")[2] and hasattr(item, "_id"):
                item._id = type(item._id).parse(f"{item.nodeid}@{'_'.join(groups)}")


def pytest_configure(config):
    config.pluginmanager.register(XdistGroupIds(), "initmem-xdist-group-ids")
