"""Re-analyse a committed evidence folder without training, and keep the READMEs' verdict tables
in step with its claims.

    .venv/bin/python -m initmem reanalyse evidence/jpeg-cifar10-small            # tables, figures, README blocks
    .venv/bin/python -m initmem reanalyse evidence/jpeg-cifar10-small --no-figures

An evidence folder holds what a config's training produced (``tables/runs.csv``, one row per run,
and ``tables/history.csv.gz``, one row per run and epoch). From those two files alone this writes
``tables/{spreads.csv, beta.csv, claims.csv, claims.md, paper_tables.md}`` and ``figures/<fig>.png``
(each figure the folder's studies support), with the same library functions the workflow's
``tables`` and ``figure`` rules call; then it fills the verdict-table block (between
:data:`initmem.reports.verdict_tables.BEGIN` and ``END``) of each page :func:`readme_pages` names: the folder's
README.md (its full table), the evidence page ``evidence/README.md`` (every folder's decided rows,
findings and counts) and the repository's README.md (the family x tiers table alone), the last two from
every ``evidence/*/tables/claims.csv``. The theory outputs (``fig9``,
``linear_check.csv``, ``clocks.csv``) do not depend on the runs: the two tables are rewritten from
the folder's ``config.resolved.yaml`` and the code, Figure 9 is not kept here.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

import pandas as pd

from initmem.io import write_bytes
from initmem.reports.outputs import ANALYSIS_FLOAT, analysis_tables, write_table
from initmem.reports.verdict_tables import EVIDENCE_PAGE, readme_block, replace_block

PNG_DPI = 80  # modest committed PNGs (the workflow's own figures are PDF + PNG at matplotlib's default)


def read_evidence(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The committed runs and history of an evidence folder."""
    tables = folder / "tables"
    missing = [p for p in (tables / "runs.csv", tables / "history.csv.gz") if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: no {', '.join(str(p) for p in missing)} (an evidence folder keeps its runs there)")
    return pd.read_csv(tables / "runs.csv"), pd.read_csv(tables / "history.csv.gz")


CHANGED: list[Path] = []  # the files the current reanalyse rewrote (a byte-identical result is left alone)


def _kept(path: Path, changed: bool) -> Path:
    """``path``, noted in :data:`CHANGED` when its write changed it."""
    if changed:
        CHANGED.append(path)
    return path


def write_analysis(runs: pd.DataFrame, history: pd.DataFrame, tables: Path) -> list[Path]:
    """:func:`initmem.reports.outputs.analysis_tables` written into ``tables``."""
    return [_kept(tables / name, write_table(content, tables / name, ANALYSIS_FLOAT)) for name, content in analysis_tables(runs, history).items()]


def write_theory(folder: Path) -> list[Path]:
    """``tables/clocks.csv`` from the folder's ``config.resolved.yaml`` (the calculator's table of its
    configurations) and ``tables/linear_check.csv`` (the deep-linear check of Figure 9, ~10 CPU seconds):
    they depend on the config and the code, not on the runs. The linear check is recomputed only when
    the code behind it changed (its version, :func:`initmem.pipeline.identity.analysis_version`, is kept
    in ``tables/linear_check.version``): its training chains' last digits follow the machine's BLAS, so
    a re-run of unchanged code would move committed bytes."""
    import tempfile

    import yaml

    from initmem.figures.linear import write_linear_check
    from initmem.pipeline.grid import expand_studies
    from initmem.pipeline.identity import analysis_version
    from initmem.theory.calculator import write_clocks_table

    written = []
    resolved = folder / "config.resolved.yaml"
    table, stamp = folder / "tables" / "linear_check.csv", folder / "tables" / "linear_check.version"
    version = analysis_version("linear_check")
    with tempfile.TemporaryDirectory() as tmp:
        if resolved.is_file():
            write_clocks_table(expand_studies(yaml.safe_load(resolved.read_text())), f"{tmp}/clocks.csv")
            written.append(_kept(folder / "tables" / "clocks.csv", write_bytes(Path(f"{tmp}/clocks.csv").read_bytes(), folder / "tables" / "clocks.csv")))
        if not (table.is_file() and stamp.is_file() and stamp.read_text().strip() == version):
            write_linear_check(f"{tmp}/fig9.pdf", f"{tmp}/fig9.png", f"{tmp}/linear_check.csv")
            _kept(table, write_bytes(Path(f"{tmp}/linear_check.csv").read_bytes(), table))
            _kept(stamp, write_bytes(f"{version}\n".encode(), stamp))
    return [*written, table, stamp]


def folder_data(folder: Path) -> dict | None:
    """The data config the folder's runs trained on (its ``config.resolved.yaml``), None where it has none."""
    import yaml

    path = folder / "config.resolved.yaml"
    config = yaml.safe_load(path.read_text()) if path.is_file() else None
    return (config or {}).get("data") if isinstance(config, dict) else None


def write_figures(runs: pd.DataFrame, history: pd.DataFrame, figures: Path, data: dict | None = None) -> list[Path]:
    """``figures/<fig>.png`` for every figure the runs' studies support (:data:`initmem.pipeline.targets.FIGURES`);
    ``data``, the runs' data config, for what their footnotes say the images are."""
    import matplotlib.pyplot as plt

    from initmem.figures.registry import make_figure
    from initmem.pipeline.targets import FIGURES, figure_studies

    figures.mkdir(parents=True, exist_ok=True)
    studies = sorted(set(runs["study"]))
    written = []
    for name in FIGURES:
        use = figure_studies(name, studies)
        if use is None:
            continue
        fig = make_figure(name, runs[runs["study"].isin(use)], history[history["study"].isin(use)], data=data)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
        written.append(_kept(figures / f"{name}.png", write_bytes(buf.getvalue(), figures / f"{name}.png")))
    return written


def evidence_folders(root: Path) -> list[Path]:
    """Every ``evidence/<name>/`` under ``root`` that has a claims table."""
    return sorted(p.parent.parent for p in (root / "evidence").glob("*/tables/claims.csv"))


def readme_pages(folders: list[Path], root: Path) -> list[tuple[Path, list[Path], str]]:
    """The pages whose verdict blocks a re-analysis of ``folders`` fills: (page, the folders it reads,
    its view of :data:`initmem.reports.verdict_tables.VIEWS`). Each re-analysed folder's README; the evidence page
    and the repository's README from every folder with a claims table (:func:`evidence_folders`)."""
    every = evidence_folders(root)
    return [(f / "README.md", [f], "tier") for f in folders] + [(root / EVIDENCE_PAGE, every, "summary"),
                                                               (root / "README.md", every, "front")]


def update_readme(readme: Path, folders: list[Path], root: Path, view: str = "tier") -> bool:
    """Fill ``readme``'s verdict-table block from ``folders`` as ``view`` shows them; False when it has no block."""
    text = readme.read_text()
    try:
        new = replace_block(text, readme_block(folders, root, view))
    except ValueError:
        return False
    _kept(readme, write_bytes(new.encode(), readme))
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m initmem reanalyse FOLDER...``"""
    parser = argparse.ArgumentParser(prog="initmem reanalyse", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="evidence folders (each with tables/runs.csv and tables/history.csv.gz)")
    parser.add_argument("--no-figures", action="store_true", help="tables and README blocks only")
    parser.add_argument("--root", type=Path, default=Path("."), help="the repository (its README.md, evidence/README.md and evidence/*); default: .")
    args = parser.parse_args(argv)
    CHANGED.clear()
    try:
        for folder in args.folders:
            start = time.perf_counter()
            runs, history = read_evidence(folder)
            written = write_analysis(runs, history, folder / "tables") + write_theory(folder)
            if not args.no_figures:
                written += write_figures(runs, history, folder / "figures", folder_data(folder))
            print(f"{folder}: {len(runs)} runs, {len(history)} epoch rows -> {len(written)} files in "
                  f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
        for readme, folders, view in readme_pages(args.folders, args.root):
            if readme.is_file():
                filled = update_readme(readme, folders, args.root, view)
                print(f"{readme}: {'verdict table filled (unchanged unless listed below)' if filled else 'no verdict-table block, left alone'}", file=sys.stderr)
    except (FileNotFoundError, ValueError) as exc:
        print(f"initmem reanalyse: error: {exc}", file=sys.stderr)
        return 2
    if CHANGED:
        print(f"{len(CHANGED)} file(s) changed: {', '.join(str(p) for p in CHANGED)}", file=sys.stderr)
    else:
        print("nothing changed: every file already held what this analysis writes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
