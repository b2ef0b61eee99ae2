"""Checks of how Snakemake was invoked, made when the workflow is parsed, that stop a command which
would silently run something other than what the user meant (torch-free)."""

from __future__ import annotations

import re
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


def check_workflow_profile(argv: list[str], bases: list[Path]) -> None:
    """A workflow profile (profiles/default/) silently overrides a --profile's resources key by
    key; refuse that combination instead of submitting GPU jobs with the wrong resources."""
    if "--profile" not in argv or "--workflow-profile" in argv:
        return
    for base in bases:
        if (base / "profiles" / "default" / "config.yaml").is_file():
            raise InvocationError(
                f"{base / 'profiles/default'} would override the resources of --profile "
                f"{argv[argv.index('--profile') + 1]} (a workflow profile wins key by key). "
                "Remove or merge it, or add --workflow-profile none.")
