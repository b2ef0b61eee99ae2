"""Re-analyse a committed evidence folder without training, and keep the READMEs' verdict tables
in step with its claims.

    .venv/bin/python -m initmem reanalyse evidence/jpeg-cifar10-small            # tables, figures, README blocks
    .venv/bin/python -m initmem reanalyse evidence/jpeg-cifar10-small --no-figures

An evidence folder holds what a config's training produced (``tables/runs.csv``, one row per run,
and ``tables/history.csv.gz``, one row per run and epoch). From those two files alone this writes
``tables/{spreads.csv, beta.csv, claims.csv, claims.md, paper_tables.md}`` and ``figures/<fig>.png``
(each figure the folder's studies support), with the same library functions the workflow's
``tables`` and ``figure`` rules call; then it fills the verdict-table block (between
:data:`initmem.claims.report.BEGIN` and ``END``) of the folder's README.md (the full table) and of
the repository's README.md (a compact one per folder) from every ``evidence/*/tables/claims.csv``. The theory outputs (``fig9``,
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

from initmem.claims.report import readme_block, replace_block

PNG_DPI = 80  # modest committed PNGs (the workflow's own figures are PDF + PNG at matplotlib's default)


def read_evidence(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The committed runs and history of an evidence folder."""
    tables = folder / "tables"
    missing = [p for p in (tables / "runs.csv", tables / "history.csv.gz") if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: no {', '.join(str(p) for p in missing)} (an evidence folder keeps its runs there)")
    return pd.read_csv(tables / "runs.csv"), pd.read_csv(tables / "history.csv.gz")


def analysis_tables(runs: pd.DataFrame, history: pd.DataFrame) -> dict[str, pd.DataFrame | str]:
    """spreads.csv, beta.csv, claims.csv, claims.md and paper_tables.md (file name -> table or text)
    from the runs and history: what the workflow's ``tables`` rule and ``reanalyse`` both write."""
    from initmem.claims.analysis import beta_table, spreads
    from initmem.claims.paper_tables import paper_tables
    from initmem.claims.similarity import section
    from initmem.claims.table import claims, claims_markdown

    spread_table, claim_table = spreads(runs), claims(runs, history)
    return {"spreads.csv": spread_table, "beta.csv": beta_table(history), "claims.csv": claim_table,
            "claims.md": claims_markdown(claim_table) + "\n" + section(runs), "paper_tables.md": paper_tables(runs, spread_table)}


CHANGED: list[Path] = []  # the files the current reanalyse rewrote (a byte-identical result is left alone)


def write_bytes(data: bytes, path: Path) -> bool:
    """Write ``data`` to ``path`` atomically unless the file already holds exactly these bytes (its
    timestamp then stays as it was); True when it changed."""
    from initmem.io import atomic_path

    if path.is_file() and path.read_bytes() == data:
        return False
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    CHANGED.append(path)
    return True


# Analysis tables are written to 10 significant digits: their last digits otherwise follow the machine's BLAS and
# thread count (a re-analysis on another machine would move committed bytes), and no statistic here means more.
ANALYSIS_FLOAT = "%.10g"


def write_table(content: pd.DataFrame | str, path: Path, float_format: str | None = None) -> None:
    """One table (CSV, gzipped for a .gz path, with no timestamp in it; floats as ``float_format``, full
    precision by default) or text, atomically, only when it changed."""
    import gzip

    data = content.encode() if isinstance(content, str) else content.to_csv(index=False, float_format=float_format).encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    write_bytes(data, path)


def write_analysis(runs: pd.DataFrame, history: pd.DataFrame, tables: Path) -> list[Path]:
    """:func:`analysis_tables` written into ``tables``."""
    written = []
    for name, content in analysis_tables(runs, history).items():
        write_table(content, tables / name, ANALYSIS_FLOAT)
        written.append(tables / name)
    return written


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
            write_bytes(Path(f"{tmp}/clocks.csv").read_bytes(), folder / "tables" / "clocks.csv")
            written.append(folder / "tables" / "clocks.csv")
        if not (table.is_file() and stamp.is_file() and stamp.read_text().strip() == version):
            write_linear_check(f"{tmp}/fig9.pdf", f"{tmp}/fig9.png", f"{tmp}/linear_check.csv")
            write_bytes(Path(f"{tmp}/linear_check.csv").read_bytes(), table)
            write_bytes(f"{version}\n".encode(), stamp)
    return [*written, table, stamp]


def write_figures(runs: pd.DataFrame, history: pd.DataFrame, figures: Path) -> list[Path]:
    """``figures/<fig>.png`` for every figure the runs' studies support (:data:`initmem.pipeline.targets.FIGURES`)."""
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
        fig = make_figure(name, runs[runs["study"].isin(use)], history[history["study"].isin(use)])
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight", metadata={"Software": None})
        plt.close(fig)
        write_bytes(buf.getvalue(), figures / f"{name}.png")
        written.append(figures / f"{name}.png")
    return written


def evidence_folders(root: Path) -> list[Path]:
    """Every ``evidence/<name>/`` under ``root`` that has a claims table."""
    return sorted(p.parent.parent for p in (root / "evidence").glob("*/tables/claims.csv"))


def update_readme(readme: Path, folders: list[Path], root: Path, compact: bool = False) -> bool:
    """Fill ``readme``'s verdict-table block from ``folders``; False when it has no block."""
    text = readme.read_text()
    try:
        new = replace_block(text, readme_block(folders, root, compact))
    except ValueError:
        return False
    write_bytes(new.encode(), readme)
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m initmem reanalyse FOLDER...``"""
    parser = argparse.ArgumentParser(prog="initmem reanalyse", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="evidence folders (each with tables/runs.csv and tables/history.csv.gz)")
    parser.add_argument("--no-figures", action="store_true", help="tables and README blocks only")
    parser.add_argument("--root", type=Path, default=Path("."), help="the repository (its README.md and evidence/*); default: .")
    args = parser.parse_args(argv)
    CHANGED.clear()
    try:
        for folder in args.folders:
            start = time.perf_counter()
            runs, history = read_evidence(folder)
            written = write_analysis(runs, history, folder / "tables") + write_theory(folder)
            if not args.no_figures:
                written += write_figures(runs, history, folder / "figures")
            print(f"{folder}: {len(runs)} runs, {len(history)} epoch rows -> {len(written)} files in "
                  f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
        readmes = [(f / "README.md", [f], False) for f in args.folders] + [(args.root / "README.md", evidence_folders(args.root), True)]
        for readme, folders, compact in readmes:
            if readme.is_file():
                filled = update_readme(readme, folders, args.root, compact)
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
