import json
import math
from pathlib import Path

import pytest
import yaml

from initmem.pipeline.grid import expand_studies
from initmem.pipeline.planning import make_packs
from initmem.spec import ConfigError

ROOT = Path(__file__).resolve().parents[1]
PAPER_COUNTS = {"main": 6250, "long": 10, "lr_l2": 120, "norm_aug": 200, "best_recipe": 120, "depth": 1500}


def load(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def test_paper_config_has_the_papers_run_counts():
    runs = expand_studies(load("paper.yaml"))
    assert {s: len(r) for s, r in runs.items()} == PAPER_COUNTS
    # a run is identified by its study and id (results/runs/<study>/<run_id>.json)
    keys = [(study, r.run_id) for study, rs in runs.items() for r in rs]
    assert len(keys) == len(set(keys)) == 8200


def test_paper_specs_follow_appendix_a():
    runs = expand_studies(load("paper.yaml"))
    main = runs["main"]
    assert {r.spec["epochs"] for r in main} == {300} and {r.spec["lr"] for r in main} == {1e-3}
    assert sorted({r.spec["sigma_w"] for r in main}) == pytest.approx([i / 10 for i in range(1, 26)])
    wd = {r.spec["optimizer"]: r.spec["weight_decay"] for r in main}
    assert wd == {"sgd": 0.0, "sgd_momentum": 0.0, "adam": 0.0, "adamw": 1e-4, "muon": 1e-4}
    assert {r.spec["momentum"] for r in main if r.spec["optimizer"] == "sgd_momentum"} == {0.9}
    long_ = runs["long"][0].spec
    assert (long_["schedule"], long_["epochs"], long_["optimizer"]) == ("constant", 5000, "sgd")
    recipe = {r.spec["variant"]: r.spec for r in runs["best_recipe"]}
    assert recipe["sgd_standard"]["lr"] == 0.1 and recipe["sgd_standard"]["weight_decay"] == 5e-4
    assert recipe["sgd_standard"]["augment"] and recipe["sgd_standard"]["epochs"] == 200
    depth = {r.spec["variant"]: r.spec for r in runs["depth"]}
    assert depth["resnet56"]["patience"] == 30 and depth["resnet110"]["arch"] == "resnet110"
    assert depth["r9avg"]["patience"] is None and depth["r9avg"]["pool"] == "avg"
    assert all(r.spec["augment"] for r in runs["norm_aug"])


def test_run_ids_are_readable_and_stable():
    runs = expand_studies(load("paper.yaml"))
    assert runs["main"][0].run_id == "sgd_b16_sw0.1_s0"
    assert runs["lr_l2"][0].run_id == "lr0.001_l20_b16_sw0.1_s0"
    assert runs["depth"][0].run_id == "resnet56_sgd_b16_sw0.1_s0"
    assert [r.run_id for r in expand_studies(load("paper.yaml"))["main"]] == [r.run_id for r in runs["main"]]


def test_packs_share_everything_but_sigma_and_seed():
    runs = expand_studies(load("paper.yaml"))["main"]
    packs = make_packs(runs, 16, 4096)
    assert sum(len(p) for p in packs.values()) == 6250
    assert max(len(p) for p in packs.values()) == 16
    for members in packs.values():
        keys = {tuple((k, v) for k, v in r.spec.items() if k not in ("sigma_w", "seed")) for r in members}
        assert len(keys) == 1
    assert len(make_packs(runs, 1, 4096)) == 6250


def test_pack_size_follows_the_memory_budget():
    runs = expand_studies(load("paper.yaml"))["main"]
    packs = make_packs(runs, 64, 1024)  # 1024 images: 64 models at b=16, 8 at b=128, 4 at b=256
    sizes = {}
    for members in packs.values():
        b = members[0].spec["batch_size"]
        sizes[b] = max(sizes.get(b, 0), len(members))
        assert len(members) * b <= 1024
    assert sizes == {16: 64, 32: 32, 64: 16, 128: 8, 256: 4}
    with pytest.raises(ConfigError, match="batch_size 256 .* exceeds pack.max_images = 128"):
        make_packs(runs, 64, 128)


def test_runtime_request_is_capped_by_the_cluster_limit():
    from initmem.pipeline.targets import pack_runtime_minutes

    pack = next(iter(make_packs(expand_studies(load("paper.yaml"))["main"], 16, 2048).values()))  # sgd, b=16
    specs = [r.spec for r in pack]
    # 16 runs x 300 epochs x (40,000 + 20,000 / 3) images at 2,000 images/s, x 1.5, + 5 minutes
    assert pack_runtime_minutes(specs, 2000) == math.ceil(1.5 * 16 * 300 * (40_000 + 20_000 / 3) / 2000 / 60) + 5
    assert pack_runtime_minutes(specs, 2000, max_minutes=1440) == 1440
    assert pack_runtime_minutes(specs[:1], 1e9, max_minutes=1440) == 6


def test_runtime_request_counts_the_training_set_passes_precise_statistics_and_train_eval_add():
    """Precise BatchNorm statistics and ``train_eval`` each pass the training set forward every epoch (and the precise
    statistics once more before ``final_test``): a request that left them out would be cut at the time limit."""
    from initmem.pipeline.targets import pack_runtime_minutes, run_images

    spec = {"epochs": 300, "n_train": 40_000, "n_val": 10_000, "n_test": 10_000}
    assert run_images(spec) == pytest.approx(300 * (40_000 + 20_000 / 3))
    measured = spec | {"bn_eval": "precise", "train_eval": True, "final_test": 10_000}
    assert run_images(measured) == pytest.approx(300 * (40_000 + (20_000 + 2 * 40_000) / 3) + (10_000 + 40_000) / 3)
    assert run_images(spec | {"bn_eval": "moving", "train_eval": True}) == pytest.approx(300 * (40_000 + 60_000 / 3))
    assert pack_runtime_minutes([measured] * 4, 2000) == math.ceil(1.5 * 4 * run_images(measured) / 2000 / 60) + 5


@pytest.mark.parametrize("mutate,message", [
    (lambda c: c["studies"]["main"]["grid"].update(optimizer=["lamb"]), "optimizer = 'lamb' is unknown"),
    (lambda c: c["studies"]["main"]["grid"].update(colour=["red"]), "unknown key 'colour'"),
    (lambda c: c["studies"]["main"]["grid"].pop("seed"), "grid needs 'seed'"),
    (lambda c: c["defaults"].update(arch="vgg"), "arch = 'vgg' is unknown"),
    (lambda c: c["studies"]["main"]["grid"].update(batch_size=[]), "batch_size: must be a non-empty list"),
    (lambda c: c.update(studies={}), "no studies"),
])
def test_bad_studies_give_messages_naming_the_key(mutate, message):
    config = load("config.yaml")
    mutate(config)
    with pytest.raises(ConfigError, match=message):
        expand_studies(config)


def _cfg(grid):
    return {"defaults": load("config.yaml")["defaults"], "data": {"n_train": 64, "n_val": 4, "n_test": 4},
            "studies": {"s": {"grid": grid}}}


def test_a_grid_list_is_the_union_of_its_cartesian_products():
    runs = expand_studies(_cfg([
        {"optimizer": ["sgd", "adam", "muon"], "batch_size": [16], "sigma_w": [0.1, 2.5], "seed": [0, 1]},
        {"optimizer": ["sgd", "adam"], "batch_size": [16, 64], "sigma_w": [0.1, 2.5], "seed": [0, 1]},
    ]))["s"]
    ids = [r.run_id for r in runs]
    # 3 optimizers at b16 plus 2 optimizers at b64; the sgd/adam b16 runs named twice appear once
    assert len(ids) == len(set(ids)) == 3 * 4 + 2 * 4
    assert "muon_b16_sw2.5_s1" in ids and "adam_b64_sw0.1_s0" in ids and "muon_b64_sw0.1_s0" not in ids


MAIN = {"optimizer": ["sgd", "adam"], "batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0, 1]}


def test_appending_a_grid_at_its_own_lr_renames_no_run():
    """The way to give one optimizer its own lr: a grid list. The runs of the first grid keep their
    ids, specs and configurations; only the appended grid's runs are new, named by its own keys."""
    before = expand_studies(_cfg(MAIN))["s"]
    added = {"optimizer": ["sgd_momentum"], "lr": [0.1], "batch_size": [16], "sigma_w": [0.5, 2.0], "seed": [0, 1]}
    after = expand_studies(_cfg([MAIN, added]))["s"]
    assert after[:len(before)] == before
    assert [r.run_id for r in after[len(before):]] == [
        "sgd-momentum_lr0.1_b16_sw0.5_s0", "sgd-momentum_lr0.1_b16_sw0.5_s1",
        "sgd-momentum_lr0.1_b16_sw2_s0", "sgd-momentum_lr0.1_b16_sw2_s1"]
    assert {r.spec["lr"] for r in after[len(before):]} == {0.1} and {r.spec["lr"] for r in before} == {1e-3}
    assert "sgd_b16_sw0.5_s0" in {r.run_id for r in after}  # not sgd_lr0.001_b16_sw0.5_s0


def test_a_spec_two_grids_name_is_listed_once_under_the_first_id():
    """A later grid that names the same run with other keys (lr at its default) adds nothing for it."""
    default_lr = load("config.yaml")["defaults"]["lr"]
    again = {"optimizer": ["sgd"], "lr": [default_lr, 0.1], "batch_size": [16], "sigma_w": [0.5], "seed": [0]}
    runs = expand_studies(_cfg([MAIN, again]))["s"]
    ids = [r.run_id for r in runs]
    assert len(runs) == 16 + 1 and ids[-1] == "sgd_lr0.1_b16_sw0.5_s0"
    assert "sgd_b16_sw0.5_s0" in ids and f"sgd_lr{default_lr:g}_b16_sw0.5_s0" not in ids


def test_grids_of_a_list_may_have_different_keys():
    runs = expand_studies(_cfg([{"optimizer": ["sgd"], "sigma_w": [1.0], "seed": [0]},
                                {"batch_size": [8], "sigma_w": [1.0], "seed": [0]}]))["s"]
    assert [r.run_id for r in runs] == ["sgd_sw1_s0", "b8_sw1_s0"]


@pytest.mark.parametrize("grid, message", [
    ({"optimizer": ["sgd"], "sigma_w": [1.0], "seed": [0, 0]}, r"^studies\.s\.grid\.seed: the value 0 is listed twice"),
    ([MAIN, {"optimizer": ["adam", "muon", "adam"], "sigma_w": [1.0], "seed": [0]}],
     r"^studies\.s\.grid\[1\]\.optimizer: the value 'adam' is listed twice"),
    ({"lr": [0.1, 0.1000001], "sigma_w": [1.0], "seed": [0]}, r"^studies\.s\.grid: two different runs would be named lr0\.1_sw1_s0"),
    ([{"lr": [0.1], "sigma_w": [1.0], "seed": [0]}, {"lr": [0.1000001], "sigma_w": [2.0], "seed": [0]}],
     r"^studies\.s: grid\[1\] would name lr0\.1_\.\.\. as grid\[0\] does, for different specs"),
])
def test_a_repeated_value_or_an_ambiguous_id_is_one_line_naming_study_and_key(grid, message):
    with pytest.raises(ConfigError, match=message) as refused:
        expand_studies(_cfg(grid))
    assert "\n" not in str(refused.value)


def test_evidence_config_runs_and_scale_criteria():
    """config/evidence.yaml: the optimizer contrast, the clock collapse and the repair map, and the
    step criterion C2 of its header (every run >= 750 optimizer steps)."""
    runs = expand_studies(load("evidence.yaml"))
    assert {s: len(r) for s, r in runs.items()} == {"main": 69, "lr_l2": 24}
    main = runs["main"]
    assert {r.spec["optimizer"] for r in main if r.spec["batch_size"] == 16} == {"sgd", "sgd_momentum", "adam", "adamw", "muon"}
    for opt in ("sgd", "adam"):
        assert {r.spec["batch_size"] for r in main if r.spec["optimizer"] == opt} == {8, 16, 32}
    steps = [r.spec["epochs"] * math.ceil(r.spec["n_train"] / r.spec["batch_size"]) for rs in runs.values() for r in rs]
    assert min(steps) >= 750


def test_packs_fit_the_runtime_cap_and_runs_that_cannot_are_refused():
    config = load("paper.yaml")
    config["compute"]["images_per_second"] = 2000  # a flat assumed rate (the rate model: tests/test_rates.py)
    runs = expand_studies(config)
    main = make_packs(runs["main"], 16, 2048, config["compute"])
    from initmem.pipeline.targets import pack_runtime_minutes

    assert max(pack_runtime_minutes([r.spec for r in p], 2000) for p in main.values()) <= 1440
    long_ = make_packs(runs["long"], 16, 2048, config["compute"])
    # one 5,000-epoch run needs ~49 h: a pack each, resuming across the 3 attempts of 24 h
    assert {len(p) for p in long_.values()} == {1}
    with pytest.raises(ConfigError, match="one run needs ~49 h .* compute.attempts = 2"):
        make_packs(runs["long"], 16, 2048, {**config["compute"], "attempts": 2})


def test_new_runs_form_new_packs_and_trained_packs_keep_their_runs():
    from initmem.pipeline.planning import Pack, plan_packs

    def runs_for(seeds):
        return expand_studies(_cfg({"optimizer": ["sgd"], "batch_size": [16], "sigma_w": [0.5, 2.0], "seed": seeds}))["s"]

    def size(_):
        return 3

    first, pack_of = plan_packs(runs_for([0, 1]), [], size)
    trained = [Pack(p.name, p.members, bound=True) for p in first.values()]
    second, pack_of2 = plan_packs(runs_for([0, 1, 2]), trained, size)
    assert all(pack_of2[r] == pack_of[r] for r in pack_of)  # finished runs stay where they were trained
    new = {pack_of2[r.run_id] for r in runs_for([2])}
    assert len(new) == 1 and not new & set(first)  # the two new runs form one new pack
    # and the grouping of untrained runs is stable while other packs finish
    untrained, _ = plan_packs(runs_for([0, 1, 2]), [], size)
    done = [Pack(p.name, p.members, bound=True) for p in list(untrained.values())[:1]]
    assert set(plan_packs(runs_for([0, 1, 2]), done, size)[0]) == set(untrained)


def test_a_finished_run_renamed_by_a_default_stated_in_a_grid_list_keeps_its_pack():
    """The grid turned into a list whose first grid states the default lr: its runs get new ids
    (sgd_b16_lr0.001_sw0.5_s0) for the same specs, and stay in the packs that trained them; only the
    appended grid's runs form a new pack."""
    from initmem.pipeline.planning import Pack, plan_packs

    def size(_):
        return 8

    before = expand_studies(_cfg(MAIN))["s"]
    trained = [Pack(p.name, p.members, bound=True) for p in plan_packs(before, [], size)[0].values()]
    default_lr = load("config.yaml")["defaults"]["lr"]
    added = {"optimizer": ["sgd_momentum"], "lr": [0.1], "batch_size": [16], "sigma_w": [0.5, 2.0], "seed": [0, 1]}
    after = expand_studies(_cfg([{**MAIN, "lr": [default_lr]}, added]))["s"]
    assert f"sgd_b16_lr{default_lr:g}_sw0.5_s0" in {r.run_id for r in after}  # renamed, the same spec
    packs, pack_of = plan_packs(after, trained, size)
    spec_pack = {json.dumps(spec, sort_keys=True): p.name for p in trained for _, spec in p.members}
    for run in after[:len(before)]:
        assert pack_of[run.run_id] == spec_pack[json.dumps(run.spec, sort_keys=True)]  # reused, not retrained
    new = {name for name, pack in packs.items() if not pack.bound}
    assert len(new) == 1 and {pack_of[r.run_id] for r in after[len(before):]} == new


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["studies"].update({"bad name": c["studies"]["s"]}), "study name 'bad name'"),
    (lambda c: c["studies"]["s"].update(variants={"a|b": {}}), "variant name 'a|b'"),
    (lambda c: c["studies"]["s"]["grid"].update(batch_size=[128]), r"studies.s.grid.batch_size: 128 \(in studies.s\) exceeds data.n_train = 64"),
])
def test_names_and_batch_sizes_are_checked(mutate, message):
    cfg = _cfg({"sigma_w": [1.0], "seed": [0], "batch_size": [4]})
    mutate(cfg)
    with pytest.raises(ConfigError, match=message):
        expand_studies(cfg)
