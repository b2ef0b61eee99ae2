"""Checks of how Snakemake was invoked, made when the workflow is parsed, that stop a command which
would silently run something other than what the user meant (torch-free)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import yaml

# Study and variant names become parts of paths and of Snakemake's wildcard regexes.
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

_CONFIGFILE_FLAGS = ("--configfile", "--configfiles")


class InvocationError(ValueError):
    """The command line would run something the user did not mean; the message says how to fix it."""


def _option_values(argv: list[str], flags: tuple[str, ...]) -> list[str] | None:
    """Values of a multi-value option (``--configfile a.yaml b.yaml``), or None when absent."""
    for i, arg in enumerate(argv):
        if arg in flags:
            values = []
            for value in argv[i + 1:]:
                if value.startswith("-"):
                    break
                values.append(value)
            return values
        for flag in flags:
            if arg.startswith(flag + "="):
                return [arg.split("=", 1)[1]]
    return None


def configfile_args(argv: list[str]) -> list[str]:
    """The config files a Snakemake command line names (every ``--configfile``/``--configfiles``
    option, each with the values up to the next option), as Snakemake reads them."""
    files = []
    for i, arg in enumerate(argv):
        if arg in _CONFIGFILE_FLAGS:
            files += _option_values(argv[i:], (arg,)) or []
        elif any(arg.startswith(flag + "=") for flag in _CONFIGFILE_FLAGS):
            files.append(arg.split("=", 1)[1])
    return files


def profile_dir(argv: list[str], bases: list[Path]) -> Path | None:
    """The folder of ``--profile NAME`` as Snakemake finds it (a path, or NAME under ``bases``)."""
    names = _option_values(argv, ("--profile",))
    if not names:
        return None
    name = Path(names[0])
    for candidate in [name] + [base / name for base in bases]:
        if (candidate / "config.yaml").is_file():
            return candidate
    return None


def check_profile_configfiles(argv: list[str], bases: list[Path]) -> str | None:
    """``--configfile`` on the command line *replaces* a profile's ``configfiles`` (it does not add
    to them). Refuse when that drops every file that defines studies, so the small embedded default
    would be sent to the cluster; warn (return the message) when it swaps in other studies."""
    folder = profile_dir(argv, bases)
    given = _option_values(argv, _CONFIGFILE_FLAGS)
    if folder is None or given is None:
        return None
    profile = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    dropped = [f for f in profile.get("configfiles") or profile.get("configfile") or [] if f not in given]
    if not dropped:
        return None
    with_studies = []
    for f in given:
        path = Path(f)
        if path.is_file() and "studies" in (yaml.safe_load(path.read_text()) or {}):
            with_studies.append(f)
    combined = " ".join(dropped + given)
    if not with_studies:
        raise InvocationError(
            f"--configfile {' '.join(given)} replaces the configfiles of profile {folder} ({', '.join(dropped)}), "
            "and none of the given files defines studies, so the small embedded default would run. "
            f"Name them all: --configfile {combined}")
    return (f"WARNING: --configfile {' '.join(given)} replaces profile {folder}'s configfiles {dropped}: running the "
            f"studies of {', '.join(with_studies)}. To combine them: --configfile {combined}")


# Keys of a workflow profile (profiles/default/) that would override a --profile's resources key by key.
RESOURCE_KEYS = ("default-resources", "set-resources", "set-threads", "resources", "set-resource-scopes")


def check_workflow_profile(argv: list[str], bases: list[Path]) -> None:
    """A workflow profile (profiles/default/) that sets resources silently overrides a --profile's
    resources key by key; refuse that combination instead of submitting GPU jobs with the wrong
    resources. The project's own workflow profile sets none."""
    if "--profile" not in argv or "--workflow-profile" in argv:
        return
    for base in bases:
        path = base / "profiles" / "default" / "config.yaml"
        if not path.is_file():
            continue
        keys = [k for k in (yaml.safe_load(path.read_text()) or {}) if k.replace("_", "-") in RESOURCE_KEYS]
        if keys:
            raise InvocationError(
                f"{base / 'profiles/default'} sets {', '.join(keys)}, which would override the resources of --profile "
                f"{argv[argv.index('--profile') + 1]} (a workflow profile wins key by key). "
                "Remove them or merge them into the profile, or add --workflow-profile none.")


PLACEHOLDER_ACCOUNTS = ("CHANGE_ME",)


def _profile(argv: list[str], bases: list[Path]) -> dict:
    folder = profile_dir(argv, bases)
    return (yaml.safe_load((folder / "config.yaml").read_text()) or {}) if folder else {}


def check_slurm_account(argv: list[str], bases: list[Path], train_resources: list[str]) -> None:
    """Refuse to send jobs to Slurm with the profile's placeholder account (``slurm_account:
    CHANGE_ME``), at dry-run time already; ``train_resources`` are the effective resources of a
    ``train`` job (``name=value`` strings, its set-resources first: timelimit.submitted_resources)."""
    profile = _profile(argv, bases)
    executor = (_option_values(argv, ("--executor", "-e")) or [profile.get("executor")])[0]
    if executor != "slurm" or "--slurm-no-account" in argv or profile.get("slurm-no-account"):
        return
    account = next((r.split("=", 1)[1].strip("'\"") for r in train_resources if r.startswith("slurm_account=")), None)
    if account in PLACEHOLDER_ACCOUNTS:
        raise InvocationError(
            f"slurm_account is the placeholder {account}: set your account in slurm/config.yaml (sacctmgr show assoc "
            "user=$USER), or replace that line by `slurm-no-account: true` where the cluster has no accounts")


def check_data_archive(data: dict, prepared: Path | None) -> None:
    """A local archive that ``prepare_data`` will need must exist and be readable, checked when the
    workflow is parsed (so ``snakemake -n`` says it) rather than when the job runs. It is needed while
    the prepared split is missing, and always for an unverified copy (its md5 is part of every run's
    identity key: without the file, every run would be planned anew)."""
    source, archive = data.get("source"), data.get("archive")
    if source == "synthetic" or (source == "torchvision" and not archive):
        return
    if not archive:
        raise InvocationError("data.source is archive but data.archive is not set: give the path of "
                              "cifar-10-python.tar.gz (docs/data.md)")
    if prepared is not None and prepared.exists() and data.get("verify_md5", True):
        return
    path = Path(archive)
    if not path.exists():
        problem = "does not exist"
    elif not os.access(path, os.R_OK) or (path.is_dir() and not os.access(path, os.X_OK)):
        problem = "is not readable (check its permissions)"
    elif path.is_file() and path.stat().st_size == 0:
        problem = "is empty"
    else:
        return
    raise InvocationError(f"data.archive {archive} {problem}: put cifar-10-python.tar.gz there or point data.archive "
                          "at it (docs/data.md)")


# How the workflow tells the jobs (and the library's error messages) the command that started it.
INVOCATION_ENV = "INITMEM_INVOCATION"


def invocation(argv: list[str], configfiles: list, targets: list[str], cores: int | None, cwd: Path,
               executable: str = sys.executable) -> dict:
    """What a repair command must repeat of this invocation: how Snakemake was started, ``--cores``
    (where no ``--profile`` sets the executor), ``--profile``, ``--workflow-profile``, the config
    files (as Snakemake resolved them, profile's included) and ``--config``; and the targets."""
    program = Path(argv[0]) if argv else Path("snakemake")
    if program.name == "snakemake":
        try:
            start = str(program.resolve().relative_to(cwd.resolve())) if program.is_absolute() else str(program)
        except ValueError:
            start = str(program)
        start = shlex.quote(start)
    else:  # python -m snakemake
        start = f"{shlex.quote(executable)} -m snakemake"
    options = []
    profile = _option_values(argv, ("--profile",))
    if profile:
        options += ["--profile", profile[0]]
    else:
        options += ["--cores", str(cores or 1)]
    workflow_profile = _option_values(argv, ("--workflow-profile",))
    if workflow_profile:
        options += ["--workflow-profile", workflow_profile[0]]
    files = []
    for f in configfiles:
        path = Path(f)
        try:
            files.append(str(path.resolve().relative_to(cwd.resolve())) if path.is_absolute() else str(path))
        except ValueError:
            files.append(str(path))
    settings = _option_values(argv, ("--config", "-C"))
    return {"start": start, "options": options, "configfiles": files, "config": settings or [], "targets": list(targets)}


def snakemake_command(*targets: str, keep_targets: bool = False) -> str:
    """A complete, copy-pasteable Snakemake command that makes ``targets`` with the same config files,
    profile and cores as the invocation that runs this job (targets first: a target after
    ``--configfile`` would be read as one more config file). With ``keep_targets``, the invocation's
    own targets follow (or ``all``, its default), so the command also finishes what it was doing."""
    try:
        inv = json.loads(os.environ[INVOCATION_ENV])
    except (KeyError, ValueError):
        inv = {"start": "snakemake", "options": ["--cores", "1"], "configfiles": [], "config": [], "targets": []}
    wanted = list(targets)
    if keep_targets:
        wanted += [t for t in (inv["targets"] or ["all"]) if t not in wanted]
    words = [inv["start"], *inv["options"][:2], *map(shlex.quote, wanted), *inv["options"][2:]]
    if inv["config"]:
        words += ["--config", *map(shlex.quote, inv["config"])]
    if inv["configfiles"]:
        words += ["--configfile", *map(shlex.quote, inv["configfiles"])]
    return " ".join(words)


def read_only_folder(folders: list[str | Path]) -> str | None:
    """One line naming the first of ``folders`` (the results and figures folders) that exists and
    cannot be written, and why (a read-only file system, or no write permission); None when every
    existing one can be written. An invocation that trains or analyses writes into each of them."""
    for folder in map(Path, folders):
        if not folder.is_dir() or os.access(folder, os.W_OK):
            continue
        mounted = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        why = "its file system is mounted read-only" if mounted else "no write permission for this user"
        fix = "work in a writable copy of the checkout" if mounted else f"chmod -R u+w {folder} (or work in a writable copy)"
        return (f"{folder}/ is read-only ({why}): an invocation that runs jobs writes its data, runs, tables and "
                f"provenance there; {fix}")
    return None
