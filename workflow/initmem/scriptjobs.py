"""What the Snakemake analysis scripts (``workflow/scripts/``) call: each job's log, a study's run and
history tables, the analysis tables and a figure, each from its input files.

An analysis output is keyed by the package files its script imports (:func:`initmem.pipeline.identity.imported_files`),
so these live apart from the command line: an edit to ``cli.py`` reruns no analysis.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path


class _Tee:
    """The console stream and the job's log files: a log that cannot be written (a full disk) costs
    the log that text, never the console its message."""

    def __init__(self, console, *logs):
        self.console, self.logs = console, logs

    def write(self, text: str) -> int:
        self.console.write(text)
        self.console.flush()
        for log in self.logs:
            with contextlib.suppress(OSError):
                log.write(text)
                log.flush()
        return len(text)

    def flush(self) -> None:
        self.console.flush()
        for log in self.logs:
            with contextlib.suppress(OSError):
                log.flush()


@contextlib.contextmanager
def log_to(path: str | Path, attempts: bool = False) -> Iterator[None]:
    """Copy stdout and stderr into ``path`` (progress stays visible on the console too).

    ``attempts``: Snakemake empties a job's log before every attempt, so the log is also appended
    to ``<path>.attempts`` (not a Snakemake log) and ``path`` starts with the earlier attempts'
    text: after a preemption and resume the log still shows the epochs before it and why it stopped.
    """
    import datetime
    import platform

    path = Path(path)
    history = path.with_name(path.name + ".attempts")
    earlier = history.read_text() if attempts and history.is_file() else ""
    with contextlib.ExitStack() as stack:
        fh = _open_log(path)
        stack.callback(_close_quietly, fh)
        streams = [fh]
        if attempts:
            fh.write(earlier)
            streams.append(stack.enter_context(open(history, "a")))
            n = earlier.count("=== attempt ") + 1
            header = (f"=== attempt {n}: {datetime.datetime.now().isoformat(timespec='seconds')} on "
                      f"{platform.node()} (pid {os.getpid()}) ===\n")
            for s in streams:
                s.write(header)
                s.flush()
        old_out, old_err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(old_out, *streams), _Tee(old_err, *streams)
        try:
            yield
        except OSError as exc:
            if (line := write_error_line(exc)) is None:
                print(f"ERROR: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                raise
            print(line, file=sys.stderr, flush=True)  # the whole story: no traceback
            raise SystemExit(1) from None
        except KeyboardInterrupt:  # Ctrl-C: one line, no traceback (its outputs are written whole or not at all)
            from initmem.pipeline.interrupted import RESUME

            print(f"stopped by Ctrl-C before it finished, nothing half-written: {RESUME}", file=sys.stderr, flush=True)
            raise SystemExit(130) from None
        except BaseException as exc:  # the job's error belongs in its log too (an exit status alone: it said why)
            if not (isinstance(exc, SystemExit) and (exc.code is None or isinstance(exc.code, int))):
                print(f"ERROR: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            raise
        finally:
            sys.stdout, sys.stderr = old_out, old_err


def write_error_line(exc: OSError) -> str | None:
    """``ERROR: cannot write FILE: cause; what to do`` for a failed write the user can fix (a full
    disk, a read-only folder: :class:`initmem.io.WriteError`), None for any other error."""
    from initmem.io import WriteError, is_write_error

    if isinstance(exc, WriteError):
        return f"ERROR: {exc}"
    if is_write_error(exc):
        return f"ERROR: {WriteError(exc.filename or 'a file of this job', exc)}"
    return None


def _close_quietly(fh) -> None:
    """Close a log whose last writes may have failed (a full disk): the job's own error is the one to see."""
    with contextlib.suppress(OSError):
        fh.close()


def _open_log(path: Path):
    """The job's log, opened for writing in a folder made for it; a failed write is one line and exit status 1."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "w")
    except OSError as exc:
        if (line := write_error_line(exc)) is None:
            raise
        print(line.replace("a file of this job", str(path)), file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def collect_study(files: list[str], study: str, runs_out: str | Path, history_out: str | Path) -> None:
    """One study's metrics files -> run table and history table (atomic CSV writes)."""
    from initmem.claims.analysis import collect
    from initmem.io import atomic_path
    from initmem.pipeline.guards import snakemake_command
    from initmem.pipeline.records import RecordError

    try:
        runs, history = collect(list(files), study)
    except RecordError as exc:  # a damaged metrics file: cut it from its pack again, then collect
        damaged = str(exc).split(":", 1)[0]
        raise RecordError(f"{exc}; repair it from its pack: rm {damaged} && {snakemake_command(str(runs_out), keep_targets=True)}") from None
    for df, path in ((runs, runs_out), (history, history_out)):
        with atomic_path(path) as tmp:
            df.to_csv(tmp, index=False, compression="gzip" if str(path).endswith(".gz") else None)
    print(f"{study}: {len(runs)} runs ({(runs['status'] != 'ok').sum()} diverged), {len(history)} epoch rows",
          file=sys.stderr)


def _read_tables(files: list[str]):
    """Concatenated per-study tables; an empty or truncated one (a study always has runs) is an error
    that names it and the command that makes it again."""
    import pandas as pd

    from initmem.pipeline.guards import snakemake_command

    frames = []
    for f in files:
        try:
            frame = pd.read_csv(f)
        except pd.errors.EmptyDataError:
            if str(f).endswith(".runs.csv"):
                raise ValueError(f"{f}: empty (a study always has runs); make it again: rm {f} && {snakemake_command(f, keep_targets=True)}") from None
            continue  # a history with no finished epoch (every run diverged at once)
        except (pd.errors.ParserError, EOFError, OSError) as exc:
            raise ValueError(f"{f}: damaged table ({type(exc).__name__}); make it again: rm {f} && "
                             f"{snakemake_command(f, keep_targets=True)}") from None
        if frame.empty and str(f).endswith(".runs.csv"):
            raise ValueError(f"{f}: no rows (a study always has runs); make it again: rm {f} && {snakemake_command(f, keep_targets=True)}")
        if not frame.empty:  # a history with no finished epoch (every run diverged at once)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def write_tables(runs_files: list[str], history_files: list[str], outputs: dict[str, str]) -> None:
    """runs.csv, history.csv.gz, spreads.csv, beta.csv, claims.csv/.md, paper_tables.md."""
    from initmem.reports.outputs import ANALYSIS_FLOAT, analysis_tables, write_table

    runs, history = _read_tables(list(runs_files)), _read_tables(list(history_files))
    keys = {"spreads.csv": "spreads", "beta.csv": "beta", "claims.csv": "claims", "claims.md": "claims_md",
            "paper_tables.md": "paper_tables_md"}  # file name -> the rule's output name
    tables = {"runs": runs, "history": history} | {keys[name]: t for name, t in analysis_tables(runs, history).items()}
    for key, content in tables.items():
        write_table(content, Path(outputs[key]), None if key in ("runs", "history") else ANALYSIS_FLOAT)
    print(f"tables: {len(runs)} runs, {len(tables['beta'])} beta rows", file=sys.stderr)


def figure_file(name: str, table_files: list[str], pdf: str | Path, png: str | Path) -> None:
    """Build one figure from per-study tables and write PDF + PNG."""
    from initmem.figures.common import save_figure
    from initmem.figures.registry import make_figure

    runs = _read_tables([f for f in table_files if f.endswith(".runs.csv")])
    history = _read_tables([f for f in table_files if f.endswith(".history.csv.gz")])
    save_figure(make_figure(name, runs, history), pdf, png)
