"""Every `python -m initmem` command the README and docs print works as printed from the checkout
root: it names the environment's Python (a bare `python` is not the one with initmem installed), and
each subcommand it names answers --help."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "evidence").glob("*/README.md"))]


def test_every_printed_initmem_command_names_the_environments_python():
    bare = [(p.relative_to(ROOT), m.start()) for p in PAGES for m in re.finditer(r"(?<![\w/.])python -m initmem", p.read_text())]
    assert not bare, f"bare `python -m initmem` (use .venv/bin/python): {bare}"


def test_every_printed_subcommand_answers_help():
    found = {m.group(1) for p in PAGES for m in re.finditer(r"\.venv/bin/python -m initmem (\w[\w-]*)", p.read_text())}
    assert {"reanalyse", "estimate", "config", "clocks"} <= found, found
    for sub in sorted(found):
        proc = subprocess.run([sys.executable, "-m", "initmem", sub, "--help"], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0 and "usage" in proc.stdout.lower(), (sub, proc.stderr[-500:])
