"""Every command the README, the docs and the command line's help print works as printed from the
checkout root after the README's set-up: it names the environment's Python and Snakemake (a bare
`python` or `snakemake` is not the one with initmem and its packages installed), each `initmem`
subcommand it names answers --help, and the Slurm dry run prints job counts, not every job."""

import os
import re
import subprocess
import sys
from itertools import takewhile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The README, the pages it links for what it leaves out (docs/, the evidence page, the config folder's), each tier's README.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "evidence" / "README.md", ROOT / "config" / "README.md",
         *sorted((ROOT / "evidence").glob("*/README.md"))]
# Printed on purpose with the system's Python: it makes the environment, or needs only torch and numpy.
SYSTEM_PYTHON = ("python3 -m venv ", "python3 benchmarks/device_check.py")
# `snakemake -n` alone is how the prose names the dry run, not a command to paste.
DRY_RUN_NAME = "snakemake -n"
QUIET_WORDS = {"all", "rules", "progress", "host", "reason"}


def printed_commands(text: str) -> list[str]:
    """The commands of a page or help text: each line of a fenced block, each inline code span,
    split at `&&`, `;` and pipes, without comments."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    lines = [line for block in fenced for line in block.splitlines()]
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    spans = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    commands = []
    for command in lines + spans:
        commands += [part.strip() for part in re.split(r"&&|;|\|", command.split(" #")[0]) if part.strip()]
    return commands


def bare(command: str) -> bool:
    """Whether a command runs a `python` or `snakemake` found on PATH rather than the environment's."""
    words = command.split()
    if words[0] == "snakemake":
        return len(words) > 1 and command != DRY_RUN_NAME
    if words[0] in ("python", "python3"):
        return len(words) > 1 and not command.startswith(SYSTEM_PYTHON)
    return False


def _page_commands() -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), c) for p in PAGES for c in printed_commands(p.read_text())]


def test_printed_commands_are_found_in_fences_spans_and_across_line_breaks():
    text = "Run `snakemake --cores 2\nall` or\n\n```bash\nmkdir -p data && python make.py x  # a comment\n```\n"
    assert printed_commands(text) == ["mkdir -p data", "python make.py x", "snakemake --cores 2 all"]
    assert [bare(c) for c in printed_commands(text)] == [False, True, True]


def test_every_printed_command_names_the_environments_python_and_snakemake():
    found = [(page, c) for page, c in _page_commands() if bare(c)]
    assert not found, f"bare python/snakemake (use .venv/bin/python, .venv/bin/snakemake): {found}"


def targets_after_configfile(command: str) -> list[str]:
    """The words a Snakemake command gives after ``--configfile`` that are no config file: Snakemake reads
    every value up to the next option as a config file, so a target there fails (with a traceback)."""
    words = command.split()
    if not any(w.endswith("snakemake") for w in words[:1]) or "--configfile" not in words:
        return []
    after = list(takewhile(lambda w: not w.startswith("-"), words[words.index("--configfile") + 1:]))
    return [w for w in after if not w.endswith((".yaml", ".yml", ".json")) and not w.startswith(("$", "FILE", "<")) and w not in ("...", "\\")]


def test_no_printed_snakemake_command_gives_a_target_after_configfile():
    assert targets_after_configfile(".venv/bin/snakemake --configfile config/paper.yaml figures/fig6.pdf") == ["figures/fig6.pdf"]
    assert targets_after_configfile(".venv/bin/snakemake figures/fig6.pdf --configfile a.yaml b.yaml --cores 2") == []
    found = [(page, c) for page, c in _page_commands() if targets_after_configfile(c)]
    assert not found, f"a target after --configfile (Snakemake reads it as a config file; put targets first): {found}"


def test_every_printed_initmem_command_names_the_environments_python():
    bare_module = [(p.relative_to(ROOT), m.start()) for p in PAGES for m in re.finditer(r"(?<![\w/.])python -m initmem", p.read_text())]
    assert not bare_module, f"bare `python -m initmem` (use .venv/bin/python): {bare_module}"


def _help(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    proc = subprocess.run([sys.executable, "-m", "initmem", *args, "--help"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "usage" in proc.stdout.lower(), (args, proc.stderr[-500:])
    return proc.stdout


def test_every_printed_subcommand_answers_help():
    found = {m.group(1) for p in PAGES for m in re.finditer(r"\.venv/bin/python -m initmem (\w[\w-]*)", p.read_text())}
    assert {"reanalyse", "estimate", "config", "clocks"} <= found, found
    for sub in sorted(found):
        _help(sub)


def test_the_command_lines_own_help_prints_commands_that_run_as_printed():
    main = _help()
    subcommands = re.search(r"\{([\w,-]+)\}", main).group(1).split(",")
    assert {"clocks", "reanalyse", "estimate"} <= set(subcommands)
    helps = {"initmem": main, **{sub: _help(sub) for sub in subcommands}}
    examples = {name: [line.strip() for line in text.splitlines() if re.search(r"\bpython3? -m initmem\b", line)]
                for name, text in helps.items()}
    assert examples["initmem"], "the main help shows example commands"
    found = [(name, line) for name, lines in examples.items() for line in lines
             if re.search(r"(?<![\w/.])python3? -m initmem", line)]
    assert not found, f"bare `python -m initmem` in --help (use .venv/bin/python): {found}"


def _quiet_takes_only_its_words(command: str) -> bool:
    """Whether `--quiet` is followed by its own words only (a target after it would be taken as one)."""
    words = command.split()
    values = list(takewhile(lambda w: not w.startswith("-"), words[words.index("--quiet") + 1:]))
    return bool(values) and set(values) <= QUIET_WORDS


def test_the_printed_slurm_dry_runs_print_job_counts_not_every_job():
    """A paper-scale dry run lists ~78,000 lines; `--quiet rules` (after the targets: it takes words)
    keeps the job counts and the GPU-hours and checkpoint-disk lines."""
    dry_runs = [(page, c) for page, c in _page_commands()
                if c.startswith(".venv/bin/snakemake") and "--profile slurm" in c and re.search(r"(^|\s)-n(\s|$)", c)]
    assert any(page == "README.md" for page, _ in dry_runs), "the README prints the Slurm dry run"
    long_ = [(page, c) for page, c in dry_runs if "--quiet" not in c or not _quiet_takes_only_its_words(c)]
    assert not long_, f"Slurm dry runs without `--quiet rules` after their targets: {long_}"


def _normal_pip(command: str) -> str:
    """A pip install as the Makefile or a page writes it, without the environment's path and -q."""
    command = re.sub(r"^(\$\(VENV\)|\.venv)/bin/(python -m pip|pip)\b", "pip", command.strip())
    return " ".join(word for word in command.split() if word != "-q")


def test_every_printed_alternative_to_make_env_installs_what_make_env_does():
    """A page that spells out `make env` by hand (python3 -m venv .venv && ...) runs every pip install of the
    Makefile's env recipe, the editable install of this project included (without it `python -m initmem` fails)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^\$\(VENV\)/\.installed:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    wanted = [_normal_pip(line) for line in recipe.splitlines() if " pip install" in line]
    assert any("-e ." in w for w in wanted) and any("requirements.txt" in w for w in wanted), wanted
    spans = [(p, " ".join(span.split())) for p in PAGES
             for span in re.findall(r"`([^`]+)`", re.sub(r"^```[^\n]*\n.*?^```", "", p.read_text(), flags=re.S | re.M))]
    alternatives = [(p, span) for p, span in spans if "-m venv .venv" in span]
    assert alternatives, "docs/slurm.md spells out make env"
    for page, span in alternatives:
        installs = [_normal_pip(part) for part in span.split("&&") if "pip install" in part]
        assert all(w in installs for w in wanted), f"{page.relative_to(ROOT)}: `{span}` misses {set(wanted) - set(installs)}"
