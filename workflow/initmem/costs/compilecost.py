"""What ``compute.compile`` adds to a training job's Slurm request: compile minutes and the compile
workers' host memory. Off (``false``), both are zero and every request and plan is what it was.

**Minutes.** Each attempt of a job compiles its graphs before its first steps (a job requeued at its
time limit compiles again; the shared cache of :mod:`initmem.cluster.compilecache` usually makes
that faster, but the first job of a shape compiles cold, and the request covers the cold case). A
graph is counted at :data:`COMPILE_MINUTES_PER_GRAPH` minutes: the device check's quick
``compile: step`` row (a b=16 single run) took 101-143 s cold, its whole step at one shape; 143 s
rounded up to 3 minutes. That measurement is of ``step``; ``true`` (the forward pass only) is assumed
to cost no more per graph. Graphs per job (:func:`compiled_graphs`), shapes being static
(:mod:`initmem.engine.compute`): the training batch, the last partial training batch where
``n_train`` is no multiple of the batch size, :data:`EVAL_GRAPHS` evaluation shapes (an upper bound:
the evaluation chunk and the last partial chunk of validation and of test), one more with
``train_eval``, and with ``step`` the optimizer update, compiled as a graph of its own.

**Memory.** TorchInductor compiles in a pool of worker processes, ``min(32, CPUs of the job)`` of
them (``torch._inductor.config.decide_compile_threads``; 4 with the Slurm profile's ``set-threads``),
beside the training process. :data:`COMPILE_WORKERS_MB` is a stated assumption, not measured: 512 MiB
per worker for those 4 workers. Measure it (the peak RSS of the job with ``compile`` on, ``sacct -o
MaxRSS``) before trusting it.

Torch-free: the Snakefile sizes packs and requests with it on every parse.
"""

from __future__ import annotations

COMPILE_MINUTES_PER_GRAPH = 3  # 143 s, the slowest cold compile of the quick compile: step row, rounded up
EVAL_GRAPHS = 3  # evaluation chunk, last partial chunk of validation, of test (an upper bound)
COMPILE_WORKERS_MB = 2048  # assumed, not measured: 4 Inductor compile workers x 512 MiB


def compile_on(compute: dict) -> bool:
    """Whether ``compute.compile`` compiles anything (``true`` or ``step``)."""
    return bool(compute.get("compile", False))


def compiled_graphs(spec: dict, compile: bool | str) -> int:
    """Graphs one attempt of a job training ``spec`` compiles (0 with ``compile`` off)."""
    if not compile:
        return 0
    b, n_train = int(spec["batch_size"]), int(spec["n_train"])
    train = 1 + (n_train % b != 0)
    evaluation = EVAL_GRAPHS + bool(spec.get("train_eval", False))
    return train + evaluation + (compile == "step")


def compile_minutes(specs: list[dict], compute: dict) -> int:
    """Minutes each attempt of the job training ``specs`` spends compiling (0 with ``compile`` off);
    the members of a pack share their shapes."""
    return COMPILE_MINUTES_PER_GRAPH * compiled_graphs(specs[0], compute.get("compile", False))


def compile_mem_mb(compute: dict) -> int:
    """Host memory (MiB) the compile workers add to a job (0 with ``compile`` off)."""
    return COMPILE_WORKERS_MB if compile_on(compute) else 0
