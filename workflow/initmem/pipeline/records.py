"""Metrics records on disk: pack files, per-run files, and checks of what is read back.

Torch-free: the Snakefile's ``run_metrics`` rule calls :func:`extract_run`.
"""

from __future__ import annotations

from pathlib import Path

from initmem.engine.metrics import METRICS_FORMAT, REQUIRED_KEYS
from initmem.io import read_json, write_json
from initmem.pipeline.guards import snakemake_command


class RecordError(ValueError):
    """A metrics or pack file is from another format or is damaged; the message says what to do."""


def check_record(record: dict, origin: str) -> dict:
    """Refuse records of another format (e.g. from an older initmem) with a clear message."""
    if not isinstance(record, dict) or record.get("format") != METRICS_FORMAT:
        got = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise RecordError(f"{origin}: metrics format {got!r}, this initmem reads format {METRICS_FORMAT}: delete the file "
                          "(a pack file under results/packs/ of that format must be retrained)")
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise RecordError(f"{origin}: keys {missing} missing")
    return record


def write_pack(path: str | Path, records: list[dict]) -> None:
    """All records of one pack in one file, atomically."""
    write_json(path, {"format": METRICS_FORMAT, "runs": records})


def extract_run(pack_path: str | Path, run_id: str, out_path: str | Path, log_path: str | Path | None = None,
                key: str | None = None) -> None:
    """Write one run's metrics file from its pack file, and a one-line summary (or the error, which
    names the file and the command that repairs it) to ``log_path``. With ``key``, the pack's record
    must carry that identity key (a pack file left from another version of the run is refused); a
    pack that trained the run under another id (the same spec, renamed since) gives its record of
    that key, under ``run_id``."""
    try:
        record = _pack_record(pack_path, run_id, key)
        write_json(out_path, record)
        message = (f"{run_id}: {record['status']}, tau_best {record['summary']['tau_best']}, "
                   f"test_acc_best {record['summary']['test_acc_best']}\n")
    except RecordError as exc:
        exc = RecordError(f"{exc}; its runs must be retrained: rm {pack_path} && {snakemake_command(str(out_path), keep_targets=True)}")
        message = f"ERROR: {exc}\n"
        raise exc from None
    finally:
        if log_path is not None:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            Path(log_path).write_text(message)


def _pack_record(pack_path: str | Path, run_id: str, key: str | None) -> dict:
    try:
        pack = read_json(pack_path)
    except (OSError, ValueError) as exc:
        raise RecordError(f"{pack_path}: damaged pack file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(pack, dict) or not isinstance(pack.get("runs"), list):
        raise RecordError(f"{pack_path}: not a pack file (no list of runs)")
    records = [r for r in pack["runs"] if isinstance(r, dict)]
    for record in records:
        if record.get("run_id") == run_id:
            check_record(record, str(pack_path))
            if key is not None and record.get("key") != key:
                raise RecordError(f"{pack_path}: run {run_id} was trained as {record.get('key')!r}, the config now "
                                  f"defines it as {key!r}")
            return record
    # the run reused under a new id: the key holds the spec, the data, the code and the precision, never the id
    for record in records if key is not None else ():
        if record.get("key") == key:
            return {**check_record(record, str(pack_path)), "run_id": run_id}
    raise RecordError(f"{pack_path} holds no run {run_id}")


def load_record(path: str | Path) -> dict:
    """Read and check one metrics file."""
    try:
        return check_record(read_json(path), str(path))
    except ValueError as exc:
        if isinstance(exc, RecordError):
            raise
        raise RecordError(f"{path}: not valid JSON ({exc})") from exc
