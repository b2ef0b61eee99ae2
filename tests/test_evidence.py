"""The committed evidence agrees with itself: `python -m initmem reanalyse` regenerates its tables
from its runs.csv and history.csv.gz alone, and the verdict tables and counts in claims.md, the
evidence README and the repository README are the ones its claims.csv gives."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from initmem import claims_report as R
from initmem.evidence import evidence_folders, main

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = evidence_folders(ROOT)


def _block(text: str) -> str:
    return text[text.index(R.BEGIN) + len(R.BEGIN) + 1: text.index(R.END)]


def _claims(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "tables" / "claims.csv", keep_default_na=False, na_values=[""])


def test_there_is_committed_evidence():
    assert ROOT / "evidence" / "jpeg-cifar10-small" in FOLDERS


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_reanalysis_regenerates_the_committed_tables(folder, tmp_path):
    copy = tmp_path / "evidence" / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("figures"))
    for name in ("claims.csv", "claims.md", "spreads.csv", "paper_tables.md"):
        (copy / "tables" / name).unlink()
    assert main([str(copy), "--no-figures", "--root", str(tmp_path)]) == 0
    for name in ("claims.md", "paper_tables.md"):
        assert (copy / "tables" / name).read_text() == (folder / "tables" / name).read_text(), f"{name}: rerun `python -m initmem reanalyse {folder.relative_to(ROOT)}`"
    new, old = _claims(copy), _claims(folder)
    assert new["verdict"].tolist() == old["verdict"].tolist()
    pd.testing.assert_frame_equal(new, old, check_exact=False, rtol=1e-9)
    assert _block((copy / "README.md").read_text()) == _block((folder / "README.md").read_text())


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_the_counts_agree_in_claims_md_and_both_readmes(folder):
    line = R.counts_line(_claims(folder))
    assert f"**{line}**" in (folder / "tables" / "claims.md").read_text()
    assert f"**{line}**" in _block((folder / "README.md").read_text())
    assert f"**{line}**" in _block((ROOT / "README.md").read_text())


def test_the_readme_blocks_are_generated_from_the_claims():
    assert _block((ROOT / "README.md").read_text()) == R.readme_block(FOLDERS, ROOT, compact=True)
    for folder in FOLDERS:
        assert _block((folder / "README.md").read_text()) == R.readme_block([folder], ROOT)


def test_a_readme_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="verdict-table:begin"):
        R.replace_block("# no block here\n", "table")
    assert R.replace_block(f"a\n{R.BEGIN}\nold\n{R.END}\nb\n", "new\n") == f"a\n{R.BEGIN}\nnew\n{R.END}\nb\n"


def test_reanalyse_names_a_folder_without_runs(tmp_path, capsys):
    assert main([str(tmp_path / "nothing"), "--no-figures", "--root", str(tmp_path)]) == 2
    assert "runs.csv" in capsys.readouterr().err


def test_the_tiers_table_puts_each_folder_in_its_own_column():
    def rows(*items):
        return pd.DataFrame([dict(id=i, kind="direction", quantity=f"claim {i}", verdict=v, statistic_verdict=s) for i, v, s in items])

    small = rows(("a", "outside the paper's regime", "reproduced"), ("b", "not measured", "not measured"))
    clocks = rows(("a", "reproduced", "reproduced"), ("b", "not reproduced", "not reproduced"), ("c", "not measured", "not measured"))
    text = R.tiers_table({"small": small, "clocks": clocks})
    assert "| claim a | **outside the paper's regime** (reproduced) | **reproduced** |" in text
    assert "| claim b | - | **not reproduced** |" in text
    assert "claim c" not in text  # measured in no folder: only in the counts
    assert "`clocks`: **1 directional" not in text and "`clocks`: **2 directional claims measured" in text
    other = rows(("a", "outside the paper's regime", "reproduced"))
    other["quantity"] = "claim a at another setting"
    text = R.tiers_table({"small": other, "clocks": clocks})
    assert "| claim a at another setting | **outside the paper's regime** (reproduced) | - |" in text
    assert "| claim a | - | **reproduced** |" in text
