"""The committed evidence agrees with itself: `python -m initmem reanalyse` regenerates its tables
from its runs.csv and history.csv.gz alone, and the verdict tables and counts in claims.md, each
tier's README, the evidence page (evidence/README.md) and the repository README are the ones its
claims.csv gives."""

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import script

from initmem.evidence import CHANGED, evidence_folders, main, readme_pages, update_readme
from initmem.reports import verdict_tables as R

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = evidence_folders(ROOT)
EVIDENCE_PAGE = ROOT / R.EVIDENCE_PAGE   # every decided row and finding, each tier's counts (generated block)
# The hand-written front pages: the README a newcomer reads, the evidence page, the config folder's.
FRONT_PAGES = [ROOT / "README.md", EVIDENCE_PAGE, ROOT / "config" / "README.md"]


def _block(text: str) -> str:
    return text[text.index(R.BEGIN) + len(R.BEGIN) + 1: text.index(R.END)]


def _claims(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "tables" / "claims.csv", keep_default_na=False, na_values=[""])


def test_there_is_committed_evidence():
    assert ROOT / "evidence" / "jpeg-cifar10-small" in FOLDERS


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_each_tiers_linear_check_is_stamped_with_todays_code(folder):
    """Re-analysis recomputes Figure 9's check only when its code's version differs from the stamp, and
    rewrites the stamp: a stale committed stamp costs every fresh clone the recomputation and leaves a
    changed file. After an edit to that code: python -m initmem reanalyse evidence/<tier>, and commit."""
    from initmem.pipeline.identity import analysis_version

    stamp = folder / "tables" / "linear_check.version"
    assert stamp.read_text().strip() == analysis_version("linear_check"), f"{stamp} is stale: re-analyse {folder.name}"


@pytest.fixture(scope="module")
def reanalysed(tmp_path_factory) -> dict[Path, Path]:
    """Each committed folder copied without its generated tables and re-analysed once (the tests
    below read these copies; none writes to them but the second-reanalysis test, which must change nothing).
    Each copy's root also holds a copy of the README and the evidence page, whose blocks the re-analysis fills."""
    out = {}
    for folder in FOLDERS:
        root = tmp_path_factory.mktemp(folder.name)
        copy = root / "evidence" / folder.name
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("figures"))
        for page in (ROOT / "README.md", EVIDENCE_PAGE):
            shutil.copy(page, root / page.relative_to(ROOT))
        for name in ("claims.csv", "claims.md", "spreads.csv", "paper_tables.md"):
            (copy / "tables" / name).unlink()
        assert main([str(copy), "--no-figures", "--root", str(root)]) == 0
        out[folder] = copy
    return out


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_reanalysis_regenerates_the_committed_tables(folder, reanalysed):
    copy = reanalysed[folder]
    for name in ("claims.md", "paper_tables.md", "claims.csv", "spreads.csv", "beta.csv", "linear_check.csv"):  # byte for byte
        assert (copy / "tables" / name).read_bytes() == (folder / "tables" / name).read_bytes(), f"{name}: rerun `python -m initmem reanalyse {folder.relative_to(ROOT)}`"
    new, old = _claims(copy), _claims(folder)
    assert new["verdict"].tolist() == old["verdict"].tolist()
    pd.testing.assert_frame_equal(new, old, check_exact=False, rtol=1e-9)
    assert _block((copy / "README.md").read_text()) == _block((folder / "README.md").read_text())


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_the_counts_agree_in_claims_md_the_tiers_readme_and_the_evidence_page(folder):
    line = R.counts_line(_claims(folder))
    assert f"**{line}**" in (folder / "tables" / "claims.md").read_text()
    assert f"**{line}**" in _block((folder / "README.md").read_text())
    assert f"**{line}**" in _block(EVIDENCE_PAGE.read_text())


def test_the_readme_blocks_are_what_reanalyse_writes():
    """Every page `reanalyse` fills (its list, readme_pages) holds the block it would write: each tier's
    README its full table, the evidence page every tier's summary, the README the family x tiers table."""
    pages = {page: (folders, view) for page, folders, view in readme_pages(FOLDERS, ROOT)}
    assert pages[ROOT / "README.md"] == (FOLDERS, "front") and pages[EVIDENCE_PAGE] == (FOLDERS, "summary")
    assert all(pages[folder / "README.md"] == ([folder], "tier") for folder in FOLDERS)
    for page, (folders, view) in pages.items():
        assert _block(page.read_text()) == R.readme_block(folders, ROOT, view), f"{page}: rerun `python -m initmem reanalyse`"
    with pytest.raises(ValueError, match="unknown README view"):
        R.readme_block(FOLDERS, ROOT, "compact")


def test_filling_the_readme_and_the_evidence_page_again_changes_nothing(tmp_path):
    """`reanalyse` fills the README and the evidence page through update_readme: on copies of the
    committed pages it rewrites nothing, and leaves the hand-written text around the block as it was."""
    for page, folders, view in readme_pages([], ROOT):
        copy = tmp_path / page.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(page.read_text())
        CHANGED.clear()
        assert update_readme(copy, folders, ROOT, view)
        assert CHANGED == [] and copy.read_text() == page.read_text(), page


def test_a_readme_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="verdict-table:begin"):
        R.replace_block("# no block here\n", "table")
    assert R.replace_block(f"a\n{R.BEGIN}\nold\n{R.END}\nb\n", "new\n") == f"a\n{R.BEGIN}\nnew\n{R.END}\nb\n"


def test_reanalyse_names_a_folder_without_runs(tmp_path, capsys):
    assert main([str(tmp_path / "nothing"), "--no-figures", "--root", str(tmp_path)]) == 2
    assert "runs.csv" in capsys.readouterr().err


@pytest.mark.slow
def test_a_second_reanalysis_changes_nothing_and_says_so(reanalysed, capsys):
    copy = reanalysed[ROOT / "evidence" / "jpeg-cifar10-small"]   # re-analysed once already
    capsys.readouterr()
    root = copy.parents[1]   # the tier's copy, and the README and evidence page the first re-analysis filled
    assert (root / "README.md").is_file() and (root / R.EVIDENCE_PAGE).is_file()
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    assert main([str(copy), "--no-figures", "--root", str(root)]) == 0
    assert "nothing changed" in capsys.readouterr().err
    assert before == {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_the_readme_is_small_and_shows_a_summary_per_claim_family():
    """The README's block is the family x tiers table alone, ending with a link to the evidence page,
    whose block holds every decided row, the findings several rows read and each tier's counts line."""
    text = (ROOT / "README.md").read_text()
    block = _block(text)
    hand_written = text.replace(block, "").splitlines()  # the generated verdict block grows with the tiers, not with prose
    assert len(hand_written) <= 190  # a front door: the map, the commands, the evidence summary; the rest in docs/
    assert "| claim family |" in block and "Decided rows:" not in block and "**" not in block  # no decided row, no counts line
    assert block.rstrip().endswith(f"[{R.EVIDENCE_PAGE}]({R.EVIDENCE_PAGE}).") and EVIDENCE_PAGE.is_file()
    summary = _block(EVIDENCE_PAGE.read_text())
    assert "| claim family |" in summary and "Decided rows:" in summary and "Findings read by several rows" in summary
    assert all(f"`{folder.name}`: **" in summary for folder in FOLDERS)
    assert "not official CIFAR-10 numbers" in _hand_written(EVIDENCE_PAGE.read_text())


# A timing as pages type it: "153.6 s", "2 min", "8-12 min" (not "5 minutes" of a setting's prose).
TIMING = r"\b\d[\d.,]*(?:-\d[\d.,]*)?\s?(?:min|s)\b(?![\w-])"
# A threshold or a setting, not a measurement: "at least 1 s", "<= 300 s", "Slurm's default is 300 s", "300 s before the limit".
SETTING = re.compile(rf"(?:≥|>=|<=|at least|under|budget is|default is|planned for|lasted)\s+{TIMING}|{TIMING}\s+before the limit")
# Where a measured timing comes from: the measured-numbers page, a committed benchmark table, a tier's
# ENVIRONMENT.md, or a sentence that gives the load it was measured at (with its command and scale).
MEASURED_SOURCE = re.compile(r"measured-numbers\.md|benchmarks/\w+\.md|ENVIRONMENT\.md|\bload\b")


def _paragraphs(text: str) -> list[str]:
    """A page's paragraphs, each list item and table row on its own."""
    return re.split(r"\n\s*\n|\n(?=\s*(?:- |\d+\. |\|))", text)


def _hand_written(text: str) -> str:
    """The README without its generated blocks (each between a `<!-- NAME:begin -->` and its `<!-- NAME:end -->`)."""
    return re.sub(r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->", "", text, flags=re.S)


def test_the_hand_written_readme_is_at_most_8_kb_and_types_no_measured_number():
    """Issue 64: the README a newcomer reads in two minutes, its prose at most 8 KB (the tiers, data,
    Slurm and planning details live in the pages it links). Issue 54: counts and timings typed by hand
    went stale (487 tests where 489 ran, 2 min 9 s where 5 min 44 s); they live in
    docs/measured-numbers.md, written by the command that measures them: the front pages type none."""
    text = _hand_written((ROOT / "README.md").read_text())
    assert R.BEGIN not in text and "Decided rows:" not in text
    assert len(text.encode()) <= 8_000, len(text.encode())
    assert "docs/measured-numbers.md" in text
    for page in FRONT_PAGES:
        prose = _hand_written(page.read_text())
        counts = re.findall(r"\b\d[\d,]*\s+(?:tests|test cases)\b", prose)
        assert not counts, f"test counts typed in {page.relative_to(ROOT)} (they belong in docs/measured-numbers.md): {counts}"
        timings = re.findall(TIMING, prose)
        assert not timings, f"timings typed in {page.relative_to(ROOT)} (they belong in docs/measured-numbers.md): {timings}"


def test_the_readme_links_the_pages_its_details_moved_to():
    """What left the README is one link away: every relative link of the front pages lands on a file
    (and its #anchor on a heading of it), and the README links the evidence page, the config folder's
    page and the docs pages that hold the data, Slurm and planning details."""
    readme = (ROOT / "README.md").read_text()
    for target in ("evidence/README.md", "config/README.md", "docs/data.md", "docs/slurm.md", "docs/design.md",
                   "docs/claims-and-verdicts.md#why-the-tiers-differ", "docs/measured-numbers.md#tests"):
        assert f"]({target})" in readme, target
    for page in FRONT_PAGES:
        for target in re.findall(r"\]\(([^)#:]*)(?:#([^)]*))?\)", page.read_text()):
            path, anchor = target
            if not path:
                continue
            landed = (page.parent / path).resolve()
            assert landed.exists(), f"{page.relative_to(ROOT)}: {path}"
            if anchor and landed.suffix == ".md":
                headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                            for h in re.findall(r"^#+ (.+)$", landed.read_text(), re.M)}
                assert anchor in headings, f"{page.relative_to(ROOT)}: {path}#{anchor}"


def test_the_config_page_lists_every_shipped_config():
    """config/README.md, where a Snakemake user looks first: a row for each config file shipped."""
    text = (ROOT / "config" / "README.md").read_text()
    listed = set(re.findall(r"^\| `([\w.-]+\.yaml)` \|", text, re.M))
    assert listed == {p.name for p in (ROOT / "config").glob("*.yaml")}


def test_the_gpu_recipe_pilot_trains_what_its_readme_states_and_its_fit_table_reads_it():
    """The paper-size pilot for the learning-rate repair, written for a GPU before any run: its documented
    command plans the recipe tier's measurement at the paper's data size and width on a GPU (8 runs, one pack
    per learning rate), and ``recipe.py --paper`` reads that study's runs (never silently another count)."""
    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.estimate import pack_gpu_hours
    from initmem.pipeline.grid import expand_studies

    overlay = "evidence/jpeg-cifar10-pilot/sizes/recipe-paper-gpu.yaml"
    config = load_config([ROOT / "config" / "evidence-recipe.yaml", ROOT / overlay])
    runs = expand_studies(config)
    assert list(runs) == ["lr_paper"] and config["compute"]["device"] == "cuda"
    specs = [r.spec for r in runs["lr_paper"]]
    assert {(s["lr"], s["sigma_w"], s["seed"]) for s in specs} == {(lr, sw, seed) for lr in (1e-3, 1e-2) for sw in (0.1, 2.5) for seed in (0, 1)}
    assert {(s["n_train"], s["n_val"], s["n_test"], s["width"], s["epochs"], s["batch_size"], s["bn_eval"], s["train_eval"], s["l2"])
            for s in specs} == {(40_000, 10_000, 10_000, 64, 300, 16, "precise", True, 0.0)}
    assert pack_gpu_hours(config)["lr_paper"]["jobs"] == 2
    studies, _, n_runs, design, _ = script("evidence/jpeg-cifar10-pilot/recipe.py").FIT_PILOTS["paper"]
    assert list(studies) == ["lr_paper"] and n_runs == len(specs) and (ROOT / "evidence/jpeg-cifar10-pilot" / design).exists()


def test_docs_type_no_timing_without_where_it_was_measured():
    """Issue 54: timings typed by hand went stale. A paragraph of docs/ that gives a timing names where
    it was measured (a committed measured file, or the load with the command) unless it is a setting;
    docs/measured-numbers.md is that file, every row with its command and load."""
    unsourced = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name == "measured-numbers.md":
            continue
        for paragraph in _paragraphs(_hand_written(page.read_text())):
            typed = re.findall(TIMING, SETTING.sub("", paragraph))
            if typed and not MEASURED_SOURCE.search(paragraph):
                unsourced.append(f"docs/{page.name}: {typed} in: {' '.join(paragraph.split())[:160]}")
    assert not unsourced, "timings typed without where they were measured:\n" + "\n".join(unsourced)


def test_the_clock_tiers_numbers_in_prose_match_its_runs():
    """Sentences with numbers in the READMEs, checked against runs.csv (the issue found "fits every
    Adam run" where 46 of 60 fit, and "most" SGD lr 0.3 runs near fitting where 12 of 36 were)."""
    runs = pd.read_csv(ROOT / "evidence" / "jpeg-cifar10-clocks" / "tables" / "runs.csv")
    fit = runs["tau_interp"].notna()
    adam, sgd03 = runs["optimizer"] == "adam", (runs["optimizer"] == "sgd") & (runs["lr"] == 0.3)
    said = {"46 of the 60 Adam runs fit": (fit & adam).sum() == 46 and adam.sum() == 60,
            "SGD at lr 0.3 fits 10 of its 36 runs": (fit & sgd03).sum() == 10 and sgd03.sum() == 36,
            "77 of 132\nruns fit": fit.sum() == 77 and len(runs) == 132}
    readme = (ROOT / "evidence" / "jpeg-cifar10-clocks" / "README.md").read_text()
    for sentence, true in said.items():
        assert sentence.replace("\n", " ") in " ".join(readme.split()), sentence
        assert true, sentence
    claims = _claims(ROOT / "evidence" / "jpeg-cifar10-clocks").set_index("id")
    note = claims.loc["collapse_beta_adam_T_adapt", "note"]
    assert "p not identifiable" in note and "p is not identifiable" in " ".join(readme.split())
    row = claims.loc["collapse_beta_adam_T_adapt"]
    assert row["verdict"] == "inconclusive" and row["ci_low"] <= -2 and "all four rows are `inconclusive`" in " ".join(readme.split())
    assert all(claims.loc[c, "verdict"] == "inconclusive" for c in claims.index if c.startswith("collapse_"))
    top = " ".join(_hand_written((ROOT / "README.md").read_text()).split())
    assert "fits 46 of its 60 Adam runs" in top and (fit & adam).sum() == 46
    tiers = " ".join(_hand_written(EVIDENCE_PAGE.read_text()).split())   # the tiers' one-line descriptions
    assert "(`config/evidence-clocks.yaml`, 132 runs)" in tiers and "77 runs fit" in tiers and fit.sum() == 77


def test_the_power_formula_holds_on_the_tiers():
    """The seeds each undecided |beta| row would need assume the noise floor 2 SE(beta) = 2 sigma_r /
    sqrt(seeds x Sxx): leaving one of 3 seeds out must raise each configuration's floor by about
    sqrt(3/2) (median over configurations within 15%)."""
    from initmem.claims.clock import clock_cells
    from initmem.evidence import read_evidence
    from initmem.stats import shapes as Sh

    runs, history = read_evidence(ROOT / "evidence" / "jpeg-cifar10-clocks")
    ratios = []
    for c in clock_cells(runs, history):
        cell = c.curve()
        floors = Sh.noise_floor(cell.fits(list(cell.seeds))[1])
        ratios += list(floors[1:] / floors[0])
    assert np.median(ratios) == pytest.approx(np.sqrt(3 / 2), rel=0.15)


def test_the_front_page_shows_a_split_claims_halves_together():
    """"flat near 1e-1" is read in two rows (the range and the level): a decided level half must not
    appear as a decided claim while its range half is undecided."""
    table = pd.DataFrame([dict(id="beta_level_sgd_b16", kind="direction", quantity="SGD b=16: level", verdict="reproduced",
                               statistic_verdict="reproduced", reproduced=0.1, ci_low=0.05, ci_high=0.2, paper_side="in [0.032, 0.32]"),
                          dict(id="beta_flat_sgd_b16", kind="direction", quantity="SGD b=16: range", verdict="inconclusive",
                               statistic_verdict="inconclusive", reproduced=0.6, ci_low=0.2, ci_high=1.0, paper_side="in [-0.5, 0.5]"),
                          dict(id="sgd_gt_adam_b16", kind="direction", quantity="SGD minus Adam", verdict="reproduced",
                               statistic_verdict="reproduced", reproduced=20.0, ci_low=10.0, ci_high=30.0, paper_side="> 0")])
    lines = R.decided_lines("small", table)
    assert len(lines) == 2 and any("SGD minus Adam: **reproduced**, 20" in line for line in lines)
    split = next(line for line in lines if "flat near 1e-1" in line)
    assert "**undecided**" in split and "level: reproduced" in split and "range: inconclusive" in split
    both = table.assign(verdict="reproduced")
    assert any("**reproduced** (its halves" in line for line in R.decided_lines("small", both))


def test_the_decisive_tiers_design_outcome_is_what_its_tables_give():
    """design_outcome.md (the designed claims beside their verdicts, quoted in the tier's README) is
    the script's output on the committed tables: a re-analysis that changes a verdict shows here."""
    folder = ROOT / "evidence" / "jpeg-cifar10-decisive"
    module = script("evidence/jpeg-cifar10-decisive/design_outcome.py")
    text = module.outcome(folder)
    assert (folder / "design_outcome.md").read_text() == text
    assert text in (folder / "README.md").read_text()
    assert "| `sgd_gt_adam_b32` | 99% | not reproduced |" in text  # its direction open, its size (Adam keeps more than half of SGD's) decides


def _margin(side: str) -> tuple[float, float] | None:
    import re

    m = re.fullmatch(r"in \[(\S+), (\S+)\]", str(side))
    return (float(m.group(1)), float(m.group(2))) if m else None


def _margin_rows(folder: Path) -> pd.DataFrame:
    t = _claims(folder)
    return t[(t["kind"] == "direction") & t["paper_side"].map(lambda s: _margin(s) is not None)]


def test_the_committed_tiers_hold_margin_rows():
    """The check below reads something: the tiers that measure a margin claim (a clock's exponents, a flat
    |beta|) have such rows; a tier of one configuration (the gone tier) measures none."""
    with_margins = [f.name for f in FOLDERS if not _margin_rows(f).empty]
    assert len(with_margins) >= 5 and "jpeg-cifar10-selected" in with_margins, with_margins


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_every_committed_margin_row_reads_both_ways(folder):
    """Equivalence both ways on every committed row whose side is a margin "in [a, b]": the interval
    alone (and the verdict) says `reproduced` only inside [a, b], `not reproduced` only wholly outside."""
    for _, r in _margin_rows(folder).iterrows():
        a, b = _margin(r["paper_side"])
        lo, hi = r["ci_low"], r["ci_high"]
        for word in {r["verdict"], r["statistic_verdict"], r["verdict_holm"]}:
            if word in ("reproduced", "partly tested"):
                assert a < lo and hi < b, (r["id"], word, lo, hi)
            if word == "not reproduced":
                assert hi < a or lo > b, (r["id"], word, lo, hi)


def test_every_image_the_readme_shows_is_a_tiers_own_figure():
    """The README shows the figures `reanalyse` writes (evidence/<tier>/figures/), never a copy that
    goes stale when the tier is re-analysed; so does any other front page."""
    import re

    assert re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    for page in FRONT_PAGES:
        for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text()):
            shown = (page.parent / image).resolve()
            assert re.fullmatch(r"evidence/[^/]+/figures/[^/]+\.png", str(shown.relative_to(ROOT))) and shown.is_file(), image


def test_each_tiers_figures_name_the_jpeg_copy_they_trained_on(monkeypatch, tmp_path):
    """Issue 64: every committed tier trained on the re-packed JPEG copy, and its re-analysed figures say so
    on the figure: reanalyse hands each figure the folder's data config (config.resolved.yaml)."""
    import initmem.figures.registry as registry
    from initmem.evidence import folder_data, read_evidence, write_figures
    from initmem.figures.common import what_the_runs_are

    for folder in FOLDERS:
        data = folder_data(folder)
        assert data and data.get("verify_md5") is False, folder.name
        runs, _ = read_evidence(folder)
        assert any("not the official CIFAR-10 pixels" in line for line in what_the_runs_are(runs, data)), folder.name
    import matplotlib.pyplot as plt

    given = []

    def make_figure(name, runs, history, data=None):
        given.append(data)
        return plt.figure()

    monkeypatch.setattr(registry, "make_figure", make_figure)
    small = ROOT / "evidence" / "jpeg-cifar10-small"
    runs, history = read_evidence(small)
    write_figures(runs, history, tmp_path, folder_data(small))
    assert given and all(d == folder_data(small) for d in given)
