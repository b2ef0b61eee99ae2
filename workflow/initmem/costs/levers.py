"""What ``estimate``'s GPU-hours assume: the settings that move a training job's cost (the levers:
precision, memory layout, ``torch.compile``, cuDNN's algorithms, pack sizes) and the GPU, each with
the config's setting and the status of the number the estimate takes for it:

- ``measured``: rows of the config's measured rate table (``compute.rate_table``) carry it;
- ``default``: the rate model's stated defaults for one H200 carry it (``initmem/costs/rates.py``, not measured);
- ``assumed``: nothing carries it, the estimate takes a value no measurement or default gives
  (a flat ``compute.images_per_second``, a setting the rate table has no rows for).

A lever whose hours rest partly on measured rows and partly on defaults says how many of each.
Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from initmem.costs.rates import DEFAULTS_SOURCE, TF32_GPU


@dataclass(frozen=True)
class Lever:
    """One thing the estimate assumes: its name, the config's setting, the status and what the estimate takes."""

    name: str
    setting: str
    status: str
    takes: str


def rate_status(rows: dict[str, dict]) -> tuple[str, float, float]:
    """(status, measured hours, all hours) of the central GPU-hours of ``estimate``'s per-study ``rows``
    (:func:`initmem.pipeline.estimate.pack_gpu_hours`) by the source of their rates."""
    measured = defaults = other = 0.0
    for row in rows.values():
        for per_source in row["by_kind"].values():
            for source, hours in per_source.items():
                if source.startswith("measured"):
                    measured += hours
                elif source == DEFAULTS_SOURCE:
                    defaults += hours
                else:
                    other += hours
    total = measured + defaults + other
    if other and not measured and not defaults:
        return "assumed", 0.0, total
    if measured and not defaults:
        return "measured", measured, total
    if measured:
        return f"measured for {measured:,.0f} of {total:,.0f} h, default for the rest", measured, total
    return "default", 0.0, total


def levers(config: dict, rows: dict[str, dict], other_precisions: dict[str, float], gpu: str) -> list[Lever]:
    """The levers ``estimate`` assumes for ``config`` (see the module docstring): ``rows`` its per-study
    hours, ``other_precisions`` the central hours in the other precisions, ``gpu`` the GPU its rates are for."""
    compute, pack = config["compute"], config["pack"]
    status, _, _ = rate_status(rows)
    flat = compute.get("images_per_second") is not None
    precision = compute["precision"]
    others = ", ".join(f"{p} {h:,.0f} h" for p, h in other_precisions.items())
    if flat:
        takes = f"one flat rate, {compute['images_per_second']:,} images/s, whatever the precision"
    elif status == "default":
        takes = {"float32": "the stated float32 rates", "tf32": f"TF32 at {TF32_GPU:g}x float32's GPU rate (stated default)",
                 "bf16": "bf16 at the stated factors over TF32 (NVIDIA's ResNet-50 ratio)"}[precision]
    else:
        takes = f"the rate table's {precision} rows"
    out = [Lever("precision", f"{precision} (compute.precision)", status, takes + (f"; central {others}" if others else ""))]
    layout = compute.get("memory_format", "contiguous")
    if layout == "contiguous" or flat:
        out.append(Lever("memory format", f"{layout} (compute.memory_format)", status, "the rates of NCHW tensors"))
    else:
        out.append(Lever("memory format", f"{layout} (compute.memory_format)", "assumed",
                         "the NCHW rates: no rate of the table or the defaults is channels_last's, so its gain is not counted"))
    compiled = compute.get("compile", False)
    if not compiled or flat:
        out.append(Lever("compile", f"{str(compiled).lower()} (compute.compile)", status, "eager steps"))
    else:
        measured_compiled = status.startswith("measured")
        out.append(Lever("compile", f"{compiled} (compute.compile)", status if measured_compiled else "assumed",
                         ("the table's compiled rows" if measured_compiled else "eager rates, compile's gain not counted")
                         + "; 3 minutes per compiled graph in every job's request (assumed)"))
    out.append(Lever("cuDNN algorithms", "deterministic, no autotuning (the trainer's)", status,
                     "the deterministic algorithms' rates (autotuning's gain not counted)"))
    out.append(Lever("pack size", f"pack.max_models {pack['max_models']}, pack.max_images {pack['max_images']:,}",
                     status, "packs sized by the rates' knee, the memory budget and the runtime cap"))
    out.append(Lever("GPU", f"one {gpu} per job", "assumed" if flat else status, f"the rates of one {gpu}"))
    out.append(Lever("early stopping", "patience (ResNet-56/110)", "assumed",
                     "every run trains all its epochs: an upper bound where runs stop early"))
    return out


def levers_lines(central: float, precision: str, gpu: str, found: list[Lever]) -> list[str]:
    """The central figure in the chosen precision and a table of the levers (:func:`levers`)."""
    lines = [f"central: {central:,.0f} {gpu}-hours in {precision} (compute.precision, the config's choice)",
             "what it assumes (measured: a measured rate table; default: the stated H200 defaults; assumed: neither):",
             "| lever | setting | status | the estimate takes |", "|---|---|---|---|"]
    lines += [f"| {x.name} | {x.setting} | {x.status} | {x.takes} |" for x in found]
    return lines
