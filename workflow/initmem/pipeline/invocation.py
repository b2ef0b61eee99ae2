"""What one Snakemake invocation does outside its jobs (torch-free): the checks and the one-time data
move made when the workflow is parsed (:func:`prepare_invocation`, called once from
``workflow/rules/common.smk``), and the provenance written when its jobs have run
(:func:`record_provenance`, from the Snakefile's ``onsuccess:`` / ``onerror:`` handlers).

Parsing a workflow happens for every invocation, also for one that Snakemake then refuses (another
Snakemake holds the lock) or that only prints a plan, so parse time writes nothing but the legacy
data move and the removal of stale incomplete markers (:mod:`initmem.pipeline.interrupted`: what
Snakemake is about to read, so that a dry run shows what the run will do). The resolved config, which says which config wrote a folder's tables and figures, is
written by Snakemake's handlers: they run only in an invocation that took the lock and ran its jobs
(never in a dry run, a refused or a ``Nothing to be done`` invocation).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from initmem.io import atomic_path
from initmem.pipeline.configfiles import outputs_of_another_config
from initmem.pipeline.guards import (
    InvocationError,
    check_data_archive,
    check_profile_configfiles,
    check_slurm_account,
    check_workflow_profile,
    configfile_args,
    profile_dir,
)
from initmem.pipeline.interrupted import release_finished, released_note
from initmem.pipeline.legacy import migrate_legacy_data

# The resolved config's first line names the config files that made it (what to add to a command).
CONFIGFILES_LINE = "# configfiles: "


@dataclass(frozen=True)
class Invocation:
    """What the parse-time checks found: the prepared data file this config needs, and lines for the user."""

    data: Path
    notes: tuple[str, ...]


def prepare_invocation(argv: list[str], bases: list[Path], train_resources: list[str], config: Mapping,
                       data_path: Callable[[], Path], legacy_folder: Callable[[dict, str], str], resolved: str | Path,
                       root: Path, submits_nothing: bool = False) -> Invocation:
    """Every parse-time side effect and check of one invocation, in order: the profile checks
    (:mod:`initmem.pipeline.guards`), the one-time move of an older checkout's prepared data (which
    rewrites Snakemake's records of that file in ``.snakemake/metadata``), the removal of Snakemake's
    incomplete markers of files finished before an interruption (:func:`release_finished`), the data archive check,
    and the notes on outputs of another config. Raises :class:`InvocationError` for a command that
    would run something the user did not mean. ``data_path`` gives this config's prepared data file
    (called after the move); nothing else is written. In a command that submits no job
    (``submits_nothing``: a dry run, ``--unlock``, ...) the profile's placeholder account is a
    warning (:func:`placeholder_account_warning`), not a refusal."""
    notes = []
    if (warning := check_profile_configfiles(argv, bases)):
        notes.append(warning)
    check_workflow_profile(argv, bases)
    if (warning := placeholder_account_warning(argv, bases, train_resources, submits_nothing)):
        notes.append(warning)
    if (moved := migrate_legacy_data(root, legacy_folder)):
        notes.append(moved)
    if (kept := released_note(release_finished(root))):
        notes.append(kept)
    data = data_path()
    check_data_archive(dict(config["data"]), data)
    check_archive_md5(dict(config["data"]), data)
    hint = other_data_hint(config, data, resolved, root, profile_configfiles(argv, bases), configfile_args(argv))
    if hint:
        notes.append(hint)
    elif (note := outputs_of_another_config(resolved, config)):
        notes.append(note)
    for line in notes:
        print(line, file=sys.stderr)
    return Invocation(data, tuple(notes))


def placeholder_account_warning(argv: list[str], bases: list[Path], train_resources: list[str],
                                submits_nothing: bool) -> str | None:
    """The Slurm profile's placeholder account (``slurm_account: CHANGE_ME``): a command that would
    submit jobs refuses in one line before submitting any (:func:`check_slurm_account` raises); one that
    submits none (a dry run, ``--unlock``) goes on with that line as a warning, so the README's
    ``snakemake -n --profile slurm`` works on any machine."""
    try:
        check_slurm_account(argv, bases, train_resources)
    except InvocationError as exc:
        if not submits_nothing:
            raise
        return f"WARNING: {exc}. This command submits no job, so it goes on; a run that submits jobs stops here."
    return None


def shell_python(deployment_methods: Iterable, executable: str) -> str:
    """The interpreter of the shell rules: with ``--sdm conda`` the first ``python`` on PATH (Snakemake
    activates the rule's envs/*.yaml environment before the command), else Snakemake's own
    ``executable`` (a virtual environment need not be active)."""
    return "python" if any(str(getattr(m, "name", m)).lower() == "conda" for m in deployment_methods) else executable


def check_archive_md5(data: Mapping, prepared: Path) -> None:
    """A local archive to be verified (``data.verify_md5``, the default) whose md5 is not the official
    CIFAR-10 archive's is refused while its data is not prepared, at ``snakemake -n`` already, naming
    the config that accepts a re-packed copy (rather than when ``prepare_data`` runs)."""
    archive = data.get("archive")
    if data.get("source") == "synthetic" or not archive or not data.get("verify_md5", True) or prepared.exists():
        return
    path = Path(archive)
    if not path.is_file():
        return  # an extracted folder has no md5; a missing file is check_data_archive's
    from initmem.engine.data import CIFAR10_MD5, md5sum  # numpy only, no torch

    if (got := md5sum(path)) != CIFAR10_MD5:
        raise InvocationError(
            f"data.archive {archive}: md5 {got} is not the official CIFAR-10 archive's {CIFAR10_MD5}: a truncated "
            "or corrupt file (download it again), or a re-packed copy: then add config/jpeg-copy.yaml to the "
            "--configfile files (data.verify_md5: false; its results are not on the official pixels, docs/data.md)")


def read_provenance(path: str | Path) -> tuple[dict, list[str] | None] | None:
    """A resolved config and the config files its first line names (None: not recorded); None when unreadable."""
    try:
        text = Path(path).read_text()
        config = yaml.safe_load(text) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(config, dict):
        return None
    first = text.splitlines()[0] if text else ""
    files = shlex.split(first[len(CONFIGFILES_LINE):]) if first.startswith(CONFIGFILES_LINE) else None
    return config, files


def record_provenance(path: str | Path, config: Mapping, configfiles: Iterable[str], log_path: str | Path | None = None) -> None:
    """Write ``config`` (the resolved config) to ``path`` atomically, its first line naming the config
    files of the invocation (``# configfiles: a.yaml b.yaml``; a comment: the YAML is the config);
    say so in ``log_path``."""
    import json

    files = [str(f) for f in configfiles]
    with atomic_path(path) as tmp:
        tmp.write_text(f"{CONFIGFILES_LINE}{shlex.join(files)}\n"
                       + yaml.safe_dump(json.loads(json.dumps(config)), sort_keys=False))
    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        Path(log_path).write_text(f"wrote {path}\n")


def read_bytes(path: str | Path) -> bytes | None:
    """A file's bytes, None when it does not exist (what :func:`restore_file` puts back)."""
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def restore_file(path: str | Path, content: bytes | None) -> None:
    """Put back what :func:`read_bytes` read: the content, or no file."""
    if content is None:
        Path(path).unlink(missing_ok=True)
        return
    with atomic_path(path) as tmp:
        tmp.write_bytes(content)


def finished_outputs(jobs: Iterable) -> list[str]:
    """Output paths of Snakemake's finished jobs (``workflow.dag.finished_jobs``)."""
    return [str(f) for job in jobs for f in job.output]


def wrote_into(outputs: Iterable[str], folders: Iterable[str]) -> bool:
    """Whether any of ``outputs`` lies in one of ``folders`` (a config's tables and figures)."""
    prefixes = [str(folder).rstrip("/") + "/" for folder in folders]
    return any(str(out).startswith(p) for out in outputs for p in prefixes)


def write_failures(logs: Iterable[str | Path], recorded: bool, record: str | Path) -> list[str]:
    """The lines of the failed jobs' ``logs`` that say which file could not be written and why (a
    full disk, a read-only folder: :class:`initmem.io.WriteError`), once each, and where this
    invocation ``recorded`` no provenance, that ``record`` still names the earlier config."""
    from initmem.io import WRITE_ERROR_PREFIX

    found = []
    for path in logs:
        try:
            lines = Path(path).read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        found += [line for line in lines if line.startswith(f"ERROR: {WRITE_ERROR_PREFIX}") and line not in found]
    if found and not recorded:
        found.append(f"NOTE: {record} still records the earlier config: no table or figure of this config was written")
    return found


def diverged_summary(run_files: Iterable[str]) -> str | None:
    """One line naming the runs among ``run_files`` (this invocation's new metrics files) that
    diverged; None when none did."""
    import json

    diverged = []
    for path in run_files:
        try:
            with open(path) as fh:
                status = json.load(fh).get("status")
        except (OSError, ValueError, AttributeError):
            continue
        if status == "diverged":
            diverged.append(path)
    if not diverged:
        return None
    shown = ", ".join(diverged[:10]) + (f" and {len(diverged) - 10} more" if len(diverged) > 10 else "")
    return (f"NOTE: {len(diverged)} run(s) of this invocation diverged (non-finite loss; status 'diverged' in "
            f"runs.csv, drawn as such by the figures): {shown}")


def profile_configfiles(argv: list[str], bases: list[Path]) -> tuple[Path, list[str]] | None:
    """The profile folder and its ``configfiles`` where a ``--profile`` sets this invocation's config
    files (no ``--configfile`` given to replace them); None otherwise."""
    folder = profile_dir(argv, bases)
    if folder is None or configfile_args(argv):
        return None
    profile = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    files = profile.get("configfiles") or profile.get("configfile") or []
    return (folder, [files] if isinstance(files, str) else list(files)) if files else None


def other_data_hint(config: Mapping, data: Path, resolved: str | Path, root: Path,
                    set_by: tuple[Path, list[str]] | None = None, own_files: list[str] | None = None) -> str | None:
    """One line when this config's prepared data is missing but the checkout's results were made
    from other data by other config files: how the data differs, what this invocation will do (it
    prepares its own data and writes its tables and figures over theirs, or apart from them under
    its ``name:``), and, for an invocation that names no config file of its own (``own_files``: its
    ``--configfile`` files), which ``--configfile`` to add to use theirs; where a profile sets the
    config files (``set_by``: :func:`profile_configfiles`), that this run prepares its own data.
    Read from the resolved configs (``resolved`` first, then every other: ``results/config.resolved.yaml``
    and ``results/*/config.resolved.yaml``, newest first)."""
    if data.exists():
        return None
    others = [p for p in [root / "results" / "config.resolved.yaml", *(root / "results").glob("*/config.resolved.yaml")]
              if p.is_file() and p.resolve() != Path(resolved).resolve()]
    candidates = [Path(resolved)] + sorted(others, key=lambda p: p.stat().st_mtime, reverse=True)
    for path in candidates:
        found = read_provenance(path)
        if found is None:
            continue
        previous, files = found
        if files and previous.get("data") != json_plain(config.get("data")):
            diff = data_difference(previous.get("data") or {}, config.get("data") or {})
            made = f"NOTE: this config's data differs from that of the results {path} records ({shlex.join(files)}): {diff}"
            if set_by is not None:  # adding a --configfile would replace the profile's own
                folder, own = set_by
                return f"{made}; profile {folder} sets this run's config ({', '.join(own)}), which prepares its own data and trains on it"
            does = f"this invocation prepares its own data and {_where_outputs_go(config, path, root)}"
            if own_files:
                return f"{made}: {does}"
            return f"{made}: {does}; to use theirs instead, add --configfile {shlex.join(files)}"
    return None


def data_difference(before: Mapping, now: Mapping) -> str:
    """How the data section ``now`` differs from ``before``: the source, with what it does, where the
    sources differ (the other keys follow from it), else each key that differs (``data.n_train 64, not 2000``)."""
    where = {"torchvision": "downloads CIFAR-10", "archive": "reads a local archive", "synthetic": "makes synthetic images"}
    if now.get("source") != before.get("source"):
        return (f"data.source {now.get('source')} (it {where.get(now.get('source'), 'prepares its data')}), "
                f"not data.source {before.get('source')}")
    keys = [k for k in dict.fromkeys([*now, *before]) if json_plain(now.get(k)) != json_plain(before.get(k))]
    return "; ".join(f"data.{key} {now.get(key)}, not {before.get(key)}" for key in keys) or "the same keys, another preparation"


def _where_outputs_go(config: Mapping, record: Path, root: Path) -> str:
    """Where this invocation writes its tables and figures, beside the results ``record`` describes."""
    name = config.get("name")
    if name:
        return f"writes its tables and figures under results/{name}/ and figures/{name}/, apart from theirs"
    try:
        shared = Path(record).resolve() == (root / "results" / "config.resolved.yaml").resolve()
    except OSError:
        shared = False
    if not shared:
        return "writes its tables and figures to results/tables/ and figures/"
    return ("writes its tables and figures over theirs in results/tables/ and figures/ (the runs of both are kept; to keep "
            "the tables and figures apart, give this config a `name:`, docs/outputs.md)")


def json_plain(value):
    """``value`` as it reads back from YAML (tuples as lists)."""
    import json

    return json.loads(json.dumps(value))
