"""Whether a measured rate table still describes the jobs that will train: the GPU, torch, CUDA and
cuDNN its rows were measured with (the device check writes them into ``rates.csv``) beside the torch
and CUDA this environment would train with, and the rows too fast to believe.

Torch-free: the installed torch's version is read from its ``version.py`` as text, never imported.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from initmem.costs.rates import SUSPICIOUS, RateModel

ARCH_LABELS = {"resnet9": "ResNet-9", "resnet56": "ResNet-56", "resnet110": "ResNet-110"}


def installed_torch() -> dict[str, str]:
    """``{"torch": version, "cuda": version}`` of the torch this Python would import (``cuda`` empty for a
    CPU build), read from its ``version.py`` without importing it; empty without torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {}
    try:
        text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text()
    except OSError:
        return {}
    found = {}
    for key, name in (("torch", "__version__"), ("cuda", "cuda")):
        match = re.search(rf"^{name}\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]*)['\"]", text, re.MULTILINE)
        found[key] = match.group(1) if match else ""
    return found


def table_gpu(model: RateModel, default: str = "H200") -> str:
    """The GPU a rate model's measured rows are of (``default``: the stated defaults' GPU, also where the table names none)."""
    devices = sorted({env[0] for env in model.environments if env and env[0]})
    return " / ".join(devices) if devices else default


def version_lines(model: RateModel, here: dict[str, str] | None = None) -> list[str]:
    """What ``estimate`` says about a measured table's environment: the versions its rows were measured
    with, a WARNING where they differ among its rows or from this environment's torch and CUDA (``here``,
    default :func:`installed_torch`), and one naming every measured rate above :data:`SUSPICIOUS` times
    the stated default. Empty for the stated defaults."""
    if not model.measured:
        return []
    here = installed_torch() if here is None else here
    envs = sorted(model.environments)
    named = [e for e in envs if any(e[1:])]
    lines = []
    if not named:
        lines.append("versions: the rate table names no torch, CUDA or cuDNN version (rerun benchmarks/device_check.py to record them)")
    else:
        said = "; ".join(f"{e[0] or 'GPU not named'}: torch {e[1] or '?'}, CUDA {e[2] or '?'}, cuDNN {e[3] or '?'}" for e in named)
        lines.append(f"versions: rates measured with {said}")
        if len(envs) > 1:
            lines.append(f"WARNING: the rate table's rows were measured in {len(envs)} different environments (above): "
                         "their rates may not be comparable")
        differs = sorted({f"{what} {e[i]}" for e in named for i, what in ((1, "torch"), (2, "CUDA"))
                          if e[i] and here.get(what.lower()) and e[i] != here[what.lower()]})
        if differs:
            lines.append(f"WARNING: the rate table was measured with {', '.join(differs)}, but this environment trains with "
                         f"torch {here.get('torch')}, CUDA {here.get('cuda') or 'none'}: its rates may not hold here; "
                         "rerun benchmarks/device_check.py with this environment")
    fast = model.above_default()
    if fast:
        named_fast = [f"{ARCH_LABELS.get(k[0], k[0])} b{k[2]} {k[3]} {k[4]} x{n} ({r:.1f}x)" for k, n, r in fast]
        lines.append(f"WARNING: {len(fast)} measured rate(s) above {SUSPICIOUS:g}x the stated default: "
                     + ", ".join(named_fast[:6]) + (f", and {len(fast) - 6} more" if len(fast) > 6 else "")
                     + "; check the device check's table (a timing too short, the wrong GPU) before trusting them")
    return lines
