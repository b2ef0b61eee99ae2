"""The rate model: pack sizes, runtime requests, host memory and `estimate` read one table of
images/s per (architecture, batch size, optimizer family, pack size, precision), measured or stated
defaults; a measured table never makes a pack faster than the packs measured around it."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

from initmem.costs.rates import RateModel, load_rates
from initmem.pipeline.grid import expand_studies
from initmem.pipeline.planning import plan_studies, write_plan
from initmem.pipeline.targets import job_runtime_minutes, pack_mem_mb, pack_rate, pack_runtime_minutes, pack_state_mb


def paper() -> dict:
    config = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    assert config["compute"]["images_per_second"] is None  # the paper config reads the rate model
    return config


def _packs(config):
    return {study: packs for study, (packs, _) in plan_studies(config, expand_studies(config)).items()}


def test_launch_bound_packs_grow_and_every_request_fits_its_runtime():
    config = paper()
    compute = config["compute"]
    cap, attempts = compute["max_runtime_minutes"], compute["attempts"]
    sizes = {}
    for packs in _packs(config).values():
        for pack in packs.values():
            specs = [s for _, s in pack.members]
            estimate = pack_runtime_minutes(specs, pack_rate(specs, compute).central)  # uncapped
            assert job_runtime_minutes(specs, compute) == min(estimate, cap)
            assert estimate <= cap * attempts, (pack.name, estimate)  # resumes across attempts at most
            key = (specs[0]["arch"], specs[0]["batch_size"])
            sizes[key] = max(sizes.get(key, 0), len(specs))
    # launch-bound packs (b=16 ResNet-56/110: knee > 8) grow to their knee, where they stop gaining
    # throughput, or until one more run would need more attempts than one run alone (they were cut to 8)
    model = load_rates(None)
    for pack in (p for packs in _packs(config).values() for p in packs.values()):
        specs = [s for _, s in pack.members]
        if specs[0]["arch"] == "resnet9" or specs[0]["batch_size"] != 16 or len(specs) < max(sizes[(specs[0]["arch"], 16)], 2):
            continue  # a configuration's last, smaller pack holds what is left
        knee = model.knee(specs[0], compute["precision"])
        one = math.ceil(pack_runtime_minutes(specs[:1], pack_rate(specs[:1], compute).central) / cap)
        more = specs + specs[:1]
        assert knee > 8 and (len(specs) >= knee or math.ceil(pack_runtime_minutes(more, pack_rate(more, compute).central) / cap) > one), pack.name
    # ResNet-110 packs need more than one 24-h attempt; one run alone would need as many
    resnet110 = [p for packs in _packs(config).values() for p in packs.values() if p.members[0][1]["arch"] == "resnet110"]
    for pack in resnet110:
        specs = [s for _, s in pack.members]
        one = pack_runtime_minutes(specs[:1], pack_rate(specs[:1], compute).central)
        assert math.ceil(pack_runtime_minutes(specs, pack_rate(specs, compute).central) / cap) <= max(1, math.ceil(one / cap))


def test_a_measured_table_replaces_the_defaults_for_its_keys(tmp_path):
    table = tmp_path / "rates.csv"
    table.write_text("arch,width,batch_size,family,pack,precision,images_per_s,device\n"
                     "resnet9,64,16,sgd,1,tf32,2000,H200\nresnet9,64,16,sgd,8,tf32,8000,H200\n"
                     "resnet9,64,16,sgd,1,bf16,5000,H200\nresnet9,64,16,sgd,8,bf16,20000,H200\n")  # the paper's precision
    model = RateModel.from_csv(table)
    spec = {"arch": "resnet9", "width": 64, "batch_size": 16, "optimizer": "sgd_momentum"}
    assert model.rate(spec, 8, "tf32").central == pytest.approx(8000)  # a measured pack: its rate
    assert model.rate(spec, 2, "tf32").central == pytest.approx(2000 * 2 ** (2 / 3))  # power law through 1 and 8
    assert model.rate(spec, 32, "tf32").central == pytest.approx(8000)  # beyond: the largest pack's, never more
    assert "measured" in model.rate(spec, 2, "tf32").source
    assert "defaults" in model.rate({**spec, "optimizer": "adam"}, 2, "tf32").source
    out = subprocess.run([sys.executable, "-m", "initmem", "estimate", "config/paper.yaml", "--rate-table", str(table)],
                         cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": "workflow", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert f"measured: {table}" in out.stdout and "stated defaults" in out.stdout
    with pytest.raises(FileNotFoundError, match="rate_table: .*nope.csv does not exist"):
        load_rates(str(tmp_path / "nope.csv"))


def test_a_slower_larger_pack_caps_every_pack_between_and_beyond_it():
    """{1: 20,000, 16: 9,000} images/s at b=128: a pack of 16 measured slower than one run (grouped
    convolutions) makes no pack of 2-15 faster than 9,000, and no larger pack faster either."""
    key = ("resnet9", 64, 128, "adam", "tf32")
    model = RateModel({key: {1: 20000.0, 16: 9000.0}}, "measured: test")
    spec = {"arch": "resnet9", "width": 64, "batch_size": 128, "optimizer": "adam"}
    assert model.rate(spec, 1, "tf32").central == pytest.approx(20000)
    for pack in (2, 4, 8, 15, 16, 32, 64):
        assert model.rate(spec, pack, "tf32").central == pytest.approx(9000), pack
    # launch-bound between two packs: the power law through both, below the larger one
    model = RateModel({key: {2: 4000.0, 8: 12000.0, 32: 10000.0}}, "measured: test")
    four = model.rate(spec, 4, "tf32").central
    assert four == pytest.approx(4000 * 3 ** 0.5) and 4000 < four < 12000
    assert model.rate(spec, 16, "tf32").central == pytest.approx(10000)  # capped by the slower 32
    assert model.rate(spec, 64, "tf32").central == pytest.approx(10000)
    assert model.rate(spec, 1, "tf32").central == pytest.approx(2000)  # below: the per-run rate of 2
    assert model.knee(spec, "tf32") == 8
    with pytest.raises(ValueError, match="images/s > 0"):
        RateModel({key: {4: 0.0}}, "measured: bad.csv")


def test_bf16_defaults_follow_the_public_resnet50_anchor():
    """bf16 over tf32 on one GPU: 2.6x r_gpu for ResNet-9 (NVIDIA's ResNet-50 A100 TF32 938 vs AMP
    2,470 images/s), 2x for the memory-bound ResNet-56/110."""
    from initmem.costs.rates import default_curve

    for arch, ratio in (("resnet9", 2.6), ("resnet56", 2.0), ("resnet110", 2.0)):
        (h32, g32), (h16, g16) = (default_curve(arch, 64, 128, "adam", p, 8) for p in ("tf32", "bf16"))
        assert g16 / g32 == pytest.approx(ratio) and h16 / h32 == pytest.approx(1.3)


def test_estimate_prints_a_range_and_names_its_source():
    out = subprocess.run([sys.executable, "-m", "initmem", "estimate", "config/paper.yaml"], cwd=ROOT, capture_output=True,
                         text=True, env={"PYTHONPATH": "workflow", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    total = next(line for line in out.stdout.splitlines() if line.startswith("| all |"))
    runs, jobs, low, central, high = (float(c.replace(",", "")) for c in total.strip("|").split("|")[1:6])
    assert runs == 8200 and low < central < high and 100 < central < 10000
    assert "source: stated defaults for one H200, not measured" in out.stdout and "central: " in out.stdout
    assert "H200-hours in bf16 (compute.precision, the config's choice)" in out.stdout
    assert "engine" not in out.stdout  # no comparison with code that no longer exists
    assert re.search(r"^rates: all [\d,]+ central GPU-hours rest on the stated defaults", out.stdout, re.M)
    # the checkpoint disk at the Slurm profile's peak concurrency (jobs: 200), the largest packs running
    disk = next(line for line in out.stdout.splitlines() if line.startswith("checkpoint disk with 200 training jobs"))
    between, peak = (float(x) for x in re.findall(r"([\d.]+) TiB (?:between|while)", disk))
    assert 0.6 < between < peak <= 1.1 and peak == pytest.approx(1.5 * between, rel=0.01)


def test_estimate_says_which_planned_hours_rest_on_measured_rows_and_which_on_defaults(tmp_path):
    """A rate table measuring two kinds (ResNet-9 b=128 Adam and SGD): their hours are on measured
    rows, every other kind's on the defaults, named with its hours."""
    from initmem.pipeline.estimate import estimate_table, pack_gpu_hours

    table = tmp_path / "rates.csv"
    table.write_text("arch,width,batch_size,family,pack,precision,images_per_s\n"
                     "resnet9,64,128,adam,1,bf16,9000\nresnet9,64,128,adam,16,bf16,30000\n"
                     "resnet9,64,128,sgd,1,bf16,11000\nresnet9,64,128,sgd,16,bf16,36000\n")
    config = paper()
    config["compute"]["rate_table"] = str(table)
    rows = pack_gpu_hours(config)
    want = sum(h for r in rows.values() for kind, per in r["by_kind"].items() for h in per.values()
               if kind[:3] in {("resnet9", 128, "adam"), ("resnet9", 128, "sgd")})
    line = next(x for x in estimate_table(config).splitlines() if x.startswith("rates: "))
    measured, total, defaults = (float(x.replace(",", "")) for x in re.match(
        r"rates: measured rows carry ([\d,]+) of ([\d,]+) central GPU-hours, the stated defaults ([\d,]+)", line).groups())
    assert measured == pytest.approx(want, abs=0.5) and measured + defaults == pytest.approx(total, abs=1)
    assert re.search(r"ResNet-9 b16 sgd bf16 [\d,]+ h", line) and "ResNet-9 b128 adam" not in line and "and 17 more" in line


def test_the_checkpoint_disk_grows_with_the_jobs_at_once():
    from initmem.pipeline.estimate import checkpoint_disk, profile_jobs

    config = paper()
    assert profile_jobs() == yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())["jobs"]
    few, many = checkpoint_disk(config, 10), checkpoint_disk(config, 200)
    assert few["one copy"] == pytest.approx(10 * few["largest MiB"] / 2**20)  # the ten largest packs: ResNet-9 b=16/32 x64
    assert few["between saves"] < many["between saves"] and many["jobs"] == 200


def test_a_dry_runs_estimate_of_every_pack_is_the_estimate_commands_total():
    """The lines a paper dry run ends with add up its planned packs as `estimate` does: planned from
    scratch, every pack, the same GPU-hours and checkpoint disk."""
    from initmem.pipeline.estimate import checkpoint_disk, estimate_table, planned_estimate

    config = paper()
    packs = [[spec for _, spec in pack.members] for packs, _ in plan_studies(config, expand_studies(config)).values()
             for pack in packs.values()]
    studies = [study for study, (packs_of, _) in plan_studies(config, expand_studies(config)).items() for _ in packs_of]
    lines = planned_estimate(packs, config["compute"], 200, studies, packs).splitlines()
    total = next(line for line in estimate_table(config, 200).splitlines() if line.startswith("| all |"))
    runs, jobs, low, central, high = (c.strip() for c in total.strip("|").split("|")[1:6])
    assert lines[0].startswith(f"Estimate of the {jobs} training jobs this dry run plans ({runs} runs of studies best_recipe, depth, "
                               f"long, lr_l2, main, norm_aug; bf16): GPU-hours {low} low, {central} central, {high} high")
    assert lines[2] == "  that is every run of the config: the `all` row of `initmem estimate`"
    disk = checkpoint_disk(config, 200)
    assert f"{disk['between saves']:.2f} TiB between saves" in lines[3] and len(lines) <= 5
    assert planned_estimate([], config["compute"], 200) is None  # nothing to train: nothing to say


def test_changing_the_rates_never_moves_a_trained_run(tmp_path):
    """Packs planned under a flat rate and trained stay as they are when the rate model sizes new packs."""
    config = paper()
    config["studies"] = {"depth": config["studies"]["depth"]}
    flat = {**config, "compute": {**config["compute"], "images_per_second": 2000}}
    runs = expand_studies(config)["depth"]
    old, _ = plan_studies(flat, {"depth": runs})["depth"]
    trained = next(p for p in old.values() if p.members[0][1]["arch"] == "resnet110")
    write_plan(tmp_path / "plans" / "depth" / f"{trained.name}.json",
               [{"run_id": r, "spec": s, "key": "k"} for r, s in trained.members])
    (tmp_path / "packs" / "depth").mkdir(parents=True)
    (tmp_path / "packs" / "depth" / f"{trained.name}.json").write_text("[]")
    new, pack_of = plan_studies(config, {"depth": runs}, tmp_path / "plans", tmp_path / "packs")["depth"]
    assert new[trained.name].members == trained.members and new[trained.name].bound
    assert all(pack_of[r] == trained.name for r, _ in trained.members)
    assert max(len(p.members) for p in new.values()) > max(len(p.members) for p in old.values())  # new packs grew


def test_a_rate_table_change_keeps_every_started_packs_members(tmp_path):
    """Packs whose trainer has started (a started marker, no pack file yet) keep their members when a
    measured rate table sizes packs otherwise: their checkpoints stay theirs."""
    from initmem.pipeline.planning import started_path

    config = paper()
    config["studies"] = {"depth": config["studies"]["depth"]}
    flat = {**config, "compute": {**config["compute"], "images_per_second": 2000}}
    runs = expand_studies(config)["depth"]
    old, _ = plan_studies(flat, {"depth": runs})["depth"]
    started = [p for p in old.values() if p.members[0][1]["arch"] == "resnet110"]
    assert len(started) > 1
    for pack in started:
        plan = tmp_path / "plans" / "depth" / f"{pack.name}.json"
        write_plan(plan, [{"run_id": r, "spec": s, "key": "k"} for r, s in pack.members])
        started_path(plan).write_text("{}\n")
    new, pack_of = plan_studies(config, {"depth": runs}, tmp_path / "plans", tmp_path / "packs")["depth"]
    for pack in started:
        assert new[pack.name].members == pack.members and new[pack.name].bound
        assert all(pack_of[r] == pack.name for r, _ in pack.members)
    assert max(len(p.members) for p in new.values()) > max(len(p.members) for p in old.values())  # the rest re-sized


def test_gpu_jobs_ask_for_the_cuda_context_and_the_checkpoint_peak():
    spec = next(r.spec for r in expand_studies(paper())["main"] if r.spec["optimizer"] == "adam")
    pack = [spec] * 8
    assert pack_state_mb(pack) == pytest.approx(602, rel=0.01)  # 8 x ResNet-9 width 64 + Adam state: 602 MiB
    gpu, cpu = pack_mem_mb(pack, "cuda"), pack_mem_mb(pack, "cpu")
    assert gpu >= 2560 + 1.5 * 602 + 2 * 469  # context + checkpoint peak + the float32 training split being built
    assert gpu > 3454  # what the old model asked for, and what a GPU job outgrew
    assert pack_mem_mb(pack, "auto") == max(gpu, cpu)


@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
def test_design_estimate_and_a_figures_dry_run_give_one_cost():
    """The paper's central GPU-hours are one number: `design`'s whole-config line is `estimate`'s `all`
    row, its claim rows' configurations (priced as packed) add up to it, and the dry run of Figure 6
    (studies main and lr_l2: a part of the config) prices exactly those studies' rows and names the
    whole config's number beside its own."""
    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.estimate import cluster_config, estimate_table, pack_gpu_hours, planned_estimate
    from initmem.planner import design as D

    config = cluster_config(load_config([ROOT / "config" / "paper.yaml"]))
    rows = {cells[0]: cells for line in estimate_table(config).splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    low, central, high = rows["all"][3:6]
    assert D.whole_config_line(config, "config/paper.yaml").startswith(
        f"The whole config: 95 configurations, {central} GPU-hours central ({low} low, {high} high; bf16)")
    price = D.gpu_price(config)
    assert sum(price(p, p.seeds * len(p.sigmas)) for p in D.planned(config)) == pytest.approx(float(central.replace(",", "")), abs=0.5)
    assert "bf16" in D.compute_unit(config) and "stated defaults for one H200" in D.compute_unit(config)

    planned = plan_studies(config, expand_studies(config))
    packs = {study: [[s for _, s in pack.members] for pack in packs_of.values()] for study, (packs_of, _) in planned.items()}
    fig6 = packs["main"] + packs["lr_l2"]
    lines = planned_estimate(fig6, config["compute"], None, ["main"] * len(packs["main"]) + ["lr_l2"] * len(packs["lr_l2"]),
                             [p for ps in packs.values() for p in ps]).splitlines()
    part = pack_gpu_hours(config)
    fig6_central = part["main"]["hours"][1] + part["lr_l2"]["hours"][1]
    assert "6,370 runs of studies lr_l2, main; bf16): GPU-hours" in lines[0] and f"{fig6_central:,.0f} central" in lines[0]
    assert lines[2] == (f"  a part of the config, whose 8,200 runs in 445 jobs (trained or not) take {low} low, {central} central, "
                        f"{high} high: the `all` row of `initmem estimate`")
