"""The planner (initmem.planner.design): which claims a config tests, the truths it assumes, the chance of a decision, the cheapest design."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from helpers.planner import measured_configuration, planner_config

from initmem.claims.clock import RETAINED
from initmem.planner import design as D
from initmem.stats.verdicts import greater


def test_configurations_group_the_runs_that_differ_in_sigma_w_and_seed():
    ps = D.planned(planner_config(seeds=3))
    main = [p for p in ps if p.study == "main"]
    assert sorted(p.spec["optimizer"] for p in main) == ["adam", "sgd"]
    assert {p.seeds for p in main} == {3} and {p.sigmas for p in main} == {(0.1, 0.5, 1.2, 2.5)}
    assert main[0].steps == 10 * 16  # 10 epochs of 256 images at b=16
    assert len([p for p in ps if p.study == "lr_l2"]) == 2


def test_the_assumed_spread_is_the_smallest_estimate_and_direct_measurements_come_first():
    p = next(p for p in D.planned(planner_config()) if p.study == "main" and p.spec["optimizer"] == "sgd")
    sources = [measured_configuration("tier-a", spread_pp=12), measured_configuration("tier-b", spread_pp=4), measured_configuration("tier-c", b=64, spread_pp=1)]
    t = D.spread_truth(p, sources)
    assert np.ptp(t.means[0]) == pytest.approx(0.04)   # tier-b: the b=64 source is not a direct measurement at b=16
    assert "tier-b" in t.source and "the smallest of 3" in t.source  # two tiers and the paper's 22.8 pp
    only_other_b = D.spread_truth(p, [measured_configuration("tier-c", b=64, spread_pp=1)])
    assert np.ptp(only_other_b.means[0]) == pytest.approx(0.01)  # no direct one: any batch size


def test_the_noise_moves_its_test_sampling_part_to_the_planned_test_size():
    p_bar = 0.5 - 0.1 * (np.array([0.1, 0.5, 1.2, 2.5]) - 0.1) / 2.4
    binomial = float(np.mean(p_bar) * (1 - np.mean(p_bar)))
    m = measured_configuration("t", sd=np.sqrt(binomial / 500 + 0.01 ** 2))
    assert D.noise_at(m, 500) == pytest.approx(m.sd)
    assert D.noise_at(m, 10_000) == pytest.approx(np.sqrt(binomial / 10_000 + 0.01 ** 2))


def test_a_contrast_assumes_the_smallest_difference_of_a_source_that_measured_both_arms():
    ps = [p for p in D.planned(planner_config()) if p.study == "main"]
    sgd, adam = sorted(ps, key=lambda p: p.spec["optimizer"] != "sgd")
    sources = [measured_configuration("tier-a", spread_pp=12), measured_configuration("tier-a", optimizer="adam", spread_pp=2),
               measured_configuration("tier-b", spread_pp=6), measured_configuration("tier-b", optimizer="adam", spread_pp=5)]
    t = D.contrast_truth(sgd, adam, sources)
    assert np.ptp(t.means[0]) - np.ptp(t.means[1]) == pytest.approx(0.01) and "tier-b" in t.source


def test_a_contrast_assumes_the_seed_pairing_its_source_measured():
    """The two arms' runs correlate by seed in the source that measured both: the truth carries that
    source's seed-paired deviations, so the plan at the source's own design is the rate simulated from its
    per-seed covariance (what the row's "would decide" reads); too few shared seeds pair nothing."""
    from initmem.stats import power as P
    from initmem.stats import verdicts as V

    ps = [p for p in D.planned(planner_config(seeds=12)) if p.study == "main"]
    sgd, adam = sorted(ps, key=lambda p: p.spec["optimizer"] != "sgd")
    rng = np.random.default_rng(0)
    shared, own = rng.standard_normal((1, 12)), rng.standard_normal((2, 4, 12))
    noise = [0.02 * (shared + 0.5 * own[0]) * np.linspace(0.5, 1.5, 4)[:, None], 0.02 * (shared + 0.5 * own[1])]
    sources = [measured_configuration("tier", spread_pp=10, deviations=noise[0]), measured_configuration("tier", optimizer="adam", spread_pp=2, deviations=noise[1])]
    t = D.contrast_truth(sgd, adam, sources)
    assert t.deviations is not None and "12 seed-paired seeds" in t.source
    cells = [V.Cell(m.label(), m.sigmas, np.arange(12), m.values.to_numpy(float)) for m in sources]
    mean, cov, k = P.paired_truth(cells)
    own_rate = P.paired_decision_rate(mean, cov, k, 12, greater(0))
    planned = D.contrast_rate(t, sgd.sigmas, greater(0))(12, sgd.sigmas)
    assert planned == pytest.approx(own_rate, abs=0.02)
    few = [measured_configuration("tier", spread_pp=10, deviations=noise[0][:, :3]),
           measured_configuration("tier", optimizer="adam", spread_pp=2, deviations=noise[1][:, :3])]
    t_few = D.contrast_truth(sgd, adam, few)
    assert t_few.deviations is None and "independent arms" in t_few.source  # too few seeds to measure a pairing


def test_the_planned_contrast_power_is_the_rate_of_the_rule_on_seed_paired_runs():
    """The planner's P(decision) of a contrast, against a direct simulation of the claims table's rule
    (:func:`initmem.stats.spreads.contrast_arrays` and the verdict) on runs whose seeds pair the arms
    (correlation 0.9 at each sigma_w), 1,000 draws: the paired plan agrees within Monte-Carlo error, an
    independent-arms plan (what the planner assumed before) does not."""
    from initmem.stats import spreads as S
    from initmem.stats import verdicts as V

    sigmas, sd, corr, seeds, draws = (0.1, 2.5), 0.02, 0.9, 4, 1000
    ma, mb = 0.5 - np.array([0.0, 0.03]), np.full(2, 0.5)
    rng = np.random.default_rng(7)
    cov = sd ** 2 * np.array([[1.0, corr], [corr, 1.0]])
    decided = 0
    for _ in range(draws):
        e = rng.multivariate_normal([0.0, 0.0], cov, size=(len(sigmas), seeds))
        _, low, high = S.contrast_arrays(ma[:, None] + e[..., 0], mb[:, None] + e[..., 1])
        decided += V.verdict(float(low), float(high), greater(0)) in (V.REPRODUCED, V.NOT_REPRODUCED)
    measured = decided / draws
    mc = 3 * np.sqrt(measured * (1 - measured) / draws) + 3 * np.sqrt(measured * (1 - measured) / 1000)
    paired = D.contrast_rate(D.Truth((ma, mb), sd, "test", corr), sigmas, greater(0))(seeds, sigmas)
    independent = D.contrast_rate(D.Truth((ma, mb), sd, "test", 0.0), sigmas, greater(0))(seeds, sigmas)
    assert abs(paired - measured) < mc and abs(independent - measured) > mc


def test_the_chance_of_a_decision_grows_with_seeds_and_the_cheapest_design_is_the_least_that_reaches_80_percent():
    p = next(p for p in D.planned(planner_config()) if p.study == "main" and p.spec["optimizer"] == "sgd")
    truth = D.Truth((0.5 - 0.05 * (np.array(p.sigmas) - 0.1) / 2.4,), 0.03, "test")
    rate = D.spread_rate(truth, p.sigmas, RETAINED)
    assert rate(2, p.sigmas) < rate(4, p.sigmas) < rate(16, p.sigmas)
    plan = D.Plan("sgd_keeps_spread_b16", "spread", [p], truth, rate, "")
    seeds, grid, chance, compute = D.cheapest(plan, lambda q, n: float(n))
    assert chance >= D.TARGET and rate(seeds - 1, grid) < D.TARGET
    assert compute == seeds * len(grid)
    for g in D.grids(p.sigmas):  # no other grid reaches 80% for less
        for n in range(2, seeds * len(grid) // len(g) + 1):
            assert n * len(g) >= compute or rate(n, g) < D.TARGET


def test_the_report_names_every_claim_and_a_one_seed_study_is_not_testable():
    sources = [measured_configuration("tier", spread_pp=10), measured_configuration("tier", optimizer="adam", spread_pp=2),
               measured_configuration("tier", lr=0.1, spread_pp=2)]
    text = D.report(planner_config(lr_l2_seeds=1), "c.yaml", sources=sources)
    for cid in ("sgd_keeps_spread_b16", "sgd_gt_adam_b16", "lr_reduces_sgd_b16_0.001_to_0.1"):
        assert f"`{cid}`" in text
    line = next(row for row in text.splitlines() if "lr_reduces_sgd" in row)
    assert "not testable with one seed" in line
    assert "minutes on 2 cores" in text


def test_the_regime_expects_a_fit_only_where_a_run_of_that_size_fitted_within_the_planned_steps():
    p = next(p for p in D.planned(planner_config()) if p.study == "main" and p.spec["optimizer"] == "sgd")  # 160 steps
    fits = [measured_configuration("pilot", steps_to_fit=100, steps=150, n_train=256)]
    assert D.fit_expected(p, fits) == "expected to fit at every sigma_w"
    # a longer run's fit by step 100 of 6,000: not within half of the planned 160
    assert D.fit_expected(p, [measured_configuration("pilot", steps_to_fit=100, steps=6000, n_train=256)]).startswith("not expected")
    assert D.fit_expected(p, [measured_configuration("pilot", steps_to_fit=400, steps=150, n_train=256)]).startswith("not expected")
    assert D.fit_expected(p, [measured_configuration("pilot", steps_to_fit=100, steps=150, n_train=512)]).startswith("fit unknown")


@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
def test_the_command_prints_the_decisive_tiers_plan_from_the_committed_evidence():
    out = subprocess.run([sys.executable, "-m", "initmem", "design", "config/evidence-decisive.yaml"], cwd=ROOT, capture_output=True,
                         text=True, env={"PYTHONPATH": str(ROOT / "workflow"), "PATH": "/usr/bin:/bin"}, check=True).stdout
    row = next(line for line in out.splitlines() if line.startswith("| `sgd_gt_adam_b32`"))
    # the direct measurement at b=32 (the small tier's) selected unfitted SGD predictors: it is left out, and the report says why;
    # the accepted reading at another batch size (the selected-fit tier's, b=16) is assumed instead
    assert "jpeg-cifar10-selected SGD lr 0.001 b=16" in row and "jpeg-cifar10-small" not in row.split("|")[6]
    left = out.split("## Readings left out of the assumed effects", 1)[1].split("\n## ", 1)[0]
    assert "- jpeg-cifar10-small SGD lr 0.001 b=32" in left and "by fit: the configuration at sigma_w" in left
    assert "minutes on 2 cores" in out


@pytest.mark.slow
def test_the_committed_plan_of_the_paper_is_what_the_planner_prints():
    """docs/design-paper.md holds the planner's output for config/paper.yaml: its plan regenerated here
    byte for byte; its --cheapest section (minutes of curve-rule simulations at 25 sigma_w) with a row
    per claim of the plan."""
    from initmem.pipeline.configfiles import load_config

    plans = D.plans(load_config([ROOT / "config" / "paper.yaml"]))
    text = D.report(load_config([ROOT / "config" / "paper.yaml"]), "config/paper.yaml")
    committed = (ROOT / "docs" / "design-paper.md").read_text()
    assert text in committed, "docs/design-paper.md is stale: regenerate it (the command in its first line)"
    cheapest = committed.split("## The least compute")[1]
    assert all(f"| `{p.cid}` |" in cheapest for p in plans)


CONTRASTS = ("| `sgd_gt_", "| `lr_reduces_")


def test_the_regime_tiers_committed_plan_is_what_the_planner_prints_without_the_tier(capsys, monkeypatch):
    """evidence/jpeg-cifar10-regime/design_plan.md was made before the tier existed and stays as it was:
    `design --leave-out` it regenerates its plan's claims, configurations, seeds, grids, regime and
    compute, row by row, and the whole config's compute. Since then the single-spread rule's words became
    two-way (the ``rule`` cell), the assumed effects and noise come only from readings the regime rule accepts
    (every one the plan was made from is now outside the paper's regime), and the noise is a source's per-seed
    covariance (the cell prints its largest sd per sigma_w, not a pooled one), so the assumed truth, noise and
    P(decision) cells moved, and the --cheapest section with them: those are compared by the tests of their own rules."""
    from initmem.cli import main

    monkeypatch.chdir(ROOT)  # the plan names its config as given
    main(["design", "config/evidence-regime.yaml", "--leave-out", "jpeg-cifar10-regime"])
    plan, similarity = capsys.readouterr().out.split("\n## Similarity to the paper's design", 1)
    committed = (ROOT / "evidence" / "jpeg-cifar10-regime" / "design_plan.md").read_text().split("\n## The least compute", 1)[0]

    def as_made(text: str) -> list[str]:
        """The plan's rows without their rule, truth, noise and P(decision) cells, and the whole config's line."""
        rows = [line for line in text.splitlines() if line.startswith(("| `", "The whole config"))]
        return ["|".join(c for i, c in enumerate(re.split(r"(?<!\\)\|", line)) if i not in {2, 6, 7, 8}) for line in rows]
    assert len(as_made(plan)) == 6 and as_made(plan) == as_made(committed)
    assert "## Readings left out of the assumed effects" in plan and "jpeg-cifar10-decisive SGD lr 0.001 b=16" in plan
    assert "| main: SGD lr 0.001 b=16 | 16 | 28.6 | moving | 4,800 | T_SGD 0.000113 | the first 29 |" in similarity


def test_a_left_out_tier_is_left_out_of_every_estimate():
    """Not only the spreads and noise: the |beta| peaks and levels and the collapse noise read the
    tables of the folders the sources come from."""
    every = D._tables(D.measured(), "beta.csv")
    without = D._tables(D.measured(leave_out=("jpeg-cifar10-regime",)), "beta.csv")
    assert any(f.parts[-3] == "jpeg-cifar10-regime" for f in every)
    assert without and not any(f.parts[-3] == "jpeg-cifar10-regime" for f in without) and set(without) < set(every)


def test_leave_out_names_a_folder_that_is_not_there(capsys):
    from initmem.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["design", "config/evidence-regime.yaml", "--leave-out", "jpeg-cifar10-nowhere"])
    assert stop.value.code == 2 and "--leave-out jpeg-cifar10-nowhere: no such folder under evidence/" in capsys.readouterr().err


def test_the_side_of_a_contrast_is_the_claims_tables():
    assert D.contrast_rate(D.Truth((np.zeros(2), np.zeros(2)), 0.01, ""), (0.1, 2.5), greater(0))(1, (0.1, 2.5)) == 0.0


def test_the_outcome_sets_each_planned_row_beside_its_verdict(tmp_path):
    import pandas as pd

    from initmem.claims.rows import COLUMNS

    sources = [measured_configuration("tier", spread_pp=10), measured_configuration("tier", optimizer="adam", spread_pp=2)]
    row = dict.fromkeys(COLUMNS, None) | {"id": "sgd_keeps_spread_b16", "verdict": "reproduced", "statistic_verdict": "reproduced",
                                          "reproduced": 12.5, "ci_low": 10.0, "ci_high": 15.0, "share_fit": 0.75, "verdict_holm": "reproduced"}
    (tmp_path / "tables").mkdir()
    pd.DataFrame([row], columns=COLUMNS).to_csv(tmp_path / "tables" / "claims.csv", index=False)
    text = D.outcome(planner_config(), tmp_path, sources)
    line = next(r for r in text.splitlines() if r.startswith("| `sgd_keeps_spread_b16`"))
    assert "**reproduced**" in line and "12.5 [10, 15]" in line and "75%" in line
    assert "| `sgd_gt_adam_b16` |" in text and "not in the claims table" in text
    assert text.rstrip().endswith("1 of the planned rows are decided by their verdicts (reproduced or not reproduced).")


def test_the_collapse_plan_counts_partly_tested_apart_from_its_decisions(monkeypatch):
    """P(decision) of the collapse is reproduced or not reproduced, as for every rule; partly tested is its own share."""
    shares = {"reproduced": 0.10, "not reproduced": 0.05, "partly tested": 0.70, "inconclusive": 0.15, "not identifiable": 0.0}
    monkeypatch.setattr(D, "_collapse_shares", lambda *args: shares)
    reads = [p for p in D.planned(planner_config()) if p.spec["optimizer"] == "adam"]
    assert D.collapse_rate(reads, 0.02)(4, (0.1, 2.5)) == pytest.approx(0.15)
    assert D.collapse_partly(reads, 0.02)(4, (0.1, 2.5)) == pytest.approx(0.70)


def test_cheapest_says_each_claims_search_and_writes_the_config_that_runs_its_designs(tmp_path, capsys, monkeypatch):
    """`design --cheapest --write-config FILE`: a line per claim on stderr as its search starts, the
    plan on stdout, and FILE: the configurations the decidable claims read, each at the most seeds
    and the union of sigma_w its claims' designs need, under the run ids they have in the config
    (finished runs are reused), with the command that runs it."""
    import yaml

    from initmem.cli import main
    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.grid import expand_studies

    sources = (measured_configuration("tier-a", spread_pp=12), measured_configuration("tier-a", optimizer="adam", spread_pp=2))
    monkeypatch.setattr(D, "measured", lambda evidence=D.EVIDENCE, leave_out=(): sources)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(planner_config(), sort_keys=False))
    monkeypatch.chdir(tmp_path)
    main(["design", "c.yaml", "--write-config", "cheap.yaml"])
    out, err = capsys.readouterr()
    config = load_config(["c.yaml"])
    ps = D.plans(config, sources)
    assert [re.sub(r" \(\d+ CPU-s so far\)$", "", line) for line in err.splitlines() if line.startswith("design --cheapest: claim")] == [
        f"design --cheapest: claim {i}/{len(ps)}, {p.cid}" for i, p in enumerate(ps, 1)]
    assert "## The least compute" in out
    written = load_config(["c.yaml", "cheap.yaml"])
    runs = {s: {r.run_id: r for r in rs} for s, rs in expand_studies(written).items()}
    key = lambda r: (r.config_id, float(r.spec["sigma_w"]), r.spec["seed"])
    before = {s: {key(r): r.run_id for r in rs} for s, rs in expand_studies(config).items()}
    kept = [(r.run_id, before[s].get(key(r))) for s, rs in runs.items() for r in rs.values() if key(r) in before[s]]
    assert kept and all(new == old for new, old in kept)  # every run the config had keeps its id: nothing retrains
    for p, found in zip(ps, D.cheapest_designs(config, ps), strict=True):
        for r in p.reads if found else ():
            mine = [x for x in runs[r.study].values() if x.config_id == r.config_id]
            assert len({x.spec["seed"] for x in mine}) >= found[0] and set(found[1]) <= {x.spec["sigma_w"] for x in mine}
    assert "run it with: .venv/bin/snakemake --cores 2 --configfile cheap.yaml" in err
    assert load_config(["cheap.yaml"]) == written  # complete on its own: --configfile cheap.yaml alone is the same config


def test_the_written_config_is_complete_and_its_command_is_the_slurm_profiles_for_a_gpu_config():
    """A GPU config's written file sets every section as the config's own files do (Snakemake's --configfile
    replaces the Slurm profile's configfiles, so the file alone must be the config) and runs under the profile."""
    config = {**planner_config(), "compute": {**planner_config()["compute"], "device": "cuda"}}
    sgd = next(p for p in D.planned(config) if p.study == "main" and p.spec["optimizer"] == "sgd")
    plan = D.Plan("sgd_keeps_spread_b16", "spread", [sgd], None, None, "")
    written = D.written_config(config, [plan], [(3, (0.1, 2.5), 0.9, 1.0)], D.written_name("results/cheap.yaml"))
    assert {k: v for k, v in written.items() if k not in ("studies", "name")} == {k: v for k, v in config.items() if k not in ("studies", "name")}
    assert written["name"] == "cheap"   # its tables and figures apart from the config's own (results/cheap/, figures/cheap/)
    assert written["studies"]["main"]["grid"] == [{"optimizer": ["sgd"], "batch_size": [16], "sigma_w": [0.1, 2.5], "seed": [0, 1, 2]}]
    assert D.run_command(config, "cheap.yaml") == ".venv/bin/snakemake --profile slurm --configfile cheap.yaml"


def test_the_report_says_what_the_designs_cost_together_per_claim_family():
    """The cheapest section ends with the designs together (each configuration once): their compute against the whole
    config's and the 10% goal, a row per claim family with the claim that costs it most."""
    sources = [measured_configuration("tier", spread_pp=10), measured_configuration("tier", optimizer="adam", spread_pp=2)]
    config = planner_config()
    ps = D.plans(config, sources)
    found = D.cheapest_designs(config, ps)
    text = D.report(config, "c.yaml", sources=sources, ps=ps, found=found)
    together = text.split("## The cheapest designs together", 1)[1]
    total = D.designs_compute(ps, found, D.cpu_price)
    assert f"{total:,.1f} minutes on 2 cores" in together and "the goal of 10%" in together
    assert "| optimizers |" in together and ("`sgd_gt_adam_b16`" in together or "`sgd_keeps_spread_b16`" in together)


@pytest.mark.parametrize("tier", sorted(__import__("initmem.planner.design_check", fromlist=["TIERS"]).TIERS))
def test_every_claim_the_planner_plans_for_a_tier_is_a_row_of_its_claims_table(tier):
    """`design CONFIG --leave-out TIER` plans the ids the claims table writes for that config: a planned id
    that the table does not make would be a plan of nothing (the ids are made in two places)."""
    from initmem.pipeline.configfiles import load_config
    from initmem.planner.design_check import TIERS

    planned = {p.cid for p in D.plans(load_config([ROOT / TIERS[tier]]), D.measured(leave_out=(tier,)))}
    table = set(pd.read_csv(ROOT / "evidence" / tier / "tables" / "claims.csv")["id"])
    assert planned and planned <= table, sorted(planned - table)


def test_at_the_selected_tiers_own_truth_the_plan_is_its_per_seed_covariance_rate():
    """Planned from the selected tier alone, claim b's P(decision) at the tier's design is the rate simulated
    from the tier's own per-seed covariance (the row's "would decide" arithmetic), within 5 points: the
    planner reads the same seeds' noise per sigma_w and across arms, not a pooled sd."""
    from initmem.pipeline.configfiles import load_config
    from initmem.planner import design_check as DC
    from initmem.stats import power as P

    folder = ROOT / "evidence" / "jpeg-cifar10-selected"
    sources = tuple(m for m in D.measured() if m.source == folder.name)
    plan = next(p for p in D.plans(load_config([folder / "config.resolved.yaml"]), sources) if p.cid == "sgd_gt_adam_b16")
    cells = DC.cells_of(plan, pd.read_csv(folder / "tables" / "runs.csv"))
    mean, cov, k = P.paired_truth(cells)
    own = P.paired_decision_rate(mean, cov, k, 7, plan.side)
    assert plan.seeds == 7 and abs(plan.rate(7, plan.sigmas) - own) <= 0.05, (plan.rate(7, plan.sigmas), own)
