"""The forgetting-clock calculator: the trainer's own sums, the paper's quoted clocks, the CLI and clocks.csv."""

import csv
import math

import pytest
from conftest import tiny_config, tiny_spec

from initmem.calculator import paper_points, recipe, write_clocks_table
from initmem.clocks import CLOCK_KEYS, learning_rate, run_clocks, schedule_clocks, schedule_moments
from initmem.grid import expand_studies


@pytest.mark.parametrize("overrides", [dict(optimizer="adamw", l2=1e-3, epochs=3, batch_size=40),
                                       dict(optimizer="sgd", schedule="constant", lr=0.02, epochs=2, batch_size=32)])
def test_calculator_equals_the_trainers_recorded_clocks(tiny_tensors, overrides):
    from initmem.train import train_run

    spec = tiny_spec(**overrides)
    history = train_run(spec, tiny_tensors, log=None)["history"]
    clocks = run_clocks(spec)
    assert clocks["total_steps"] == spec["epochs"] * math.ceil(96 / spec["batch_size"])
    for key in CLOCK_KEYS:
        assert clocks[key] == history[key][-1]  # the same function: bit for bit
    # and every epoch's record is the exact step-by-step sum of the schedule's rates, to float rounding
    steps = math.ceil(96 / spec["batch_size"])
    for epoch in range(spec["epochs"]):
        rates = [learning_rate(k, spec["lr"], spec["epochs"] * steps, spec["schedule"], spec["alpha"]) for k in range((epoch + 1) * steps)]
        assert history["T_adapt"][epoch] == pytest.approx(math.fsum(rates), rel=1e-13)
        assert history["T_sgd"][epoch] == pytest.approx(math.fsum(r * r for r in rates) / spec["batch_size"], rel=1e-13)


@pytest.mark.parametrize("schedule", ["cosine", "constant"])
@pytest.mark.parametrize("total", [1, 2, 3, 7, 100, 4999])
def test_closed_form_moments_equal_the_step_sums(schedule, total):
    for done in sorted({0, 1, total // 2, total - 1, total}):
        rates = [learning_rate(k, 0.3, total, schedule, 0.01) for k in range(done)]
        s1, s2 = schedule_moments(0.3, schedule, 0.01, total, done)
        assert s1 == pytest.approx(math.fsum(rates), rel=1e-12, abs=1e-15), (total, done)
        assert s2 == pytest.approx(math.fsum(r * r for r in rates), rel=1e-12, abs=1e-15), (total, done)


def test_a_wrong_closed_form_would_fail():
    # the test above must be able to fail: drop the cos sum term (S1 = lr0 a m) and a 3-step cosine is off by far more than rounding
    rates = [learning_rate(k, 1.0, 3, "cosine", 0.0) for k in range(3)]
    assert abs(0.5 * 3 - math.fsum(rates)) > 0.1
    assert schedule_moments(1.0, "cosine", 0.0, 3, 3)[0] == pytest.approx(math.fsum(rates), rel=1e-14)


def test_any_recipe_costs_constant_time_and_memory():
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.perf_counter()
    c = run_clocks(recipe(lr=1e-2, batch_size=1, epochs=5000, n_train=40000))  # 2e8 steps
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert c["total_steps"] == 200_000_000
    assert c["T_adapt"] == pytest.approx(1e-2 * (0.505 * 2e8 + 0.495), rel=1e-12)  # lr0 (a K + c sum cos), sum cos = 1
    assert elapsed < 0.5 and peak < 1_000_000


def test_schedule_clocks_refuse_steps_outside_the_schedule():
    with pytest.raises(ValueError, match="steps_done = 11"):
        schedule_clocks(recipe(), 10, 11, 0.0)
    with pytest.raises(ValueError, match="unknown schedule 'step'"):
        schedule_moments(1.0, "step", 0.0, 10, 5)


def test_paper_quoted_clocks_are_the_constant_lr_arithmetic():
    # Sec. 4.2: 7.3e-4 and 1.2e-2 (SGD b 128), 4.7 (b 16, eta 1e-2), T_L2 0.94 and 4.7 (b 128, eta 1e-2)
    quoted = [p for p in paper_points() if p["paper_value"] is not None]
    assert len(quoted) == 5
    for p in quoted:
        assert p["constant_lr"] == pytest.approx(p["paper_value"], rel=0.03), p["spec"]


def test_stored_paper_point_clocks_equal_the_exact_sums():
    # the exact (cosine) clocks are stored to 4 digits; recompute them: T_SGD of b 16, eta 1e-2 is 1.77, not 4.7
    for p in paper_points():
        assert run_clocks(p["spec"])[p["clock"]] == pytest.approx(p["exact"], rel=1e-3), p["spec"]


def test_cosine_clocks_follow_the_closed_form():
    spec = recipe(lr=1e-2, batch_size=16, epochs=300, l2=1e-3)
    c = run_clocks(spec)
    k, alpha = 300 * 2500, 0.01
    assert c["total_steps"] == k
    # sum of eta_k ~ K eta0 (alpha + (1 - alpha)/2); sum of eta_k^2 ~ K eta0^2 (alpha^2 + alpha (1 - alpha) + 3/8 (1 - alpha)^2)
    assert c["T_adapt"] == pytest.approx(k * 1e-2 * (alpha + (1 - alpha) / 2), rel=1e-5)
    assert c["T_sgd"] == pytest.approx(k * 1e-4 * (alpha**2 + alpha * (1 - alpha) + 0.375 * (1 - alpha) ** 2) / 16, rel=1e-5)
    assert c["T_l2"] == pytest.approx(1e-3 * c["T_adapt"], rel=1e-12)
    assert run_clocks({**spec, "optimizer": "adamw"})["T_wd"] == pytest.approx(1e-4 * c["T_adapt"], rel=1e-12)  # AdamW's own decay


def test_cli_prints_the_clocks_and_places_the_recipe(capsys):
    from initmem.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["clocks", "--optimizer", "sgd", "--lr", "1e-2", "--batch-size", "16", "--epochs", "300", "--schedule", "constant"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "T_SGD   = sum eta_k^2 / b  = 4.6875" in out
    assert "T_adapt = sum eta_k        = 7500" in out
    assert "<- this recipe" in out and "9.7 pp" in out  # placed beside the paper's b 16, eta 1e-2 point


@pytest.mark.parametrize("args,message", [
    (["--lr", "-1e-2", "--batch-size", "16", "--epochs", "3"], "lr = -0.01 must be a positive number"),
    (["--lr", "1e-2", "--batch-size", "0", "--epochs", "3"], "batch_size = 0 must be a positive number"),
    (["--optimizer", "rmsprop", "--lr", "1e-2", "--batch-size", "16", "--epochs", "3"], "unknown optimizer 'rmsprop'"),
    (["--lr", "abc", "--batch-size", "16", "--epochs", "3"], "invalid float value: 'abc'"),
])
def test_cli_bad_input_is_one_line_naming_the_value(capsys, args, message):
    from initmem.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["clocks", *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err


def test_clocks_table_has_one_row_per_configuration(tmp_path):
    config = tiny_config({"main": {"grid": {"optimizer": ["sgd", "adam"], "batch_size": [16, 32], "sigma_w": [0.5, 2.0], "seed": [0, 1]}},
                          "lr_l2": {"grid": {"lr": [0.01, 0.1], "l2": [0.0, 0.01], "sigma_w": [1.0], "seed": [0]}}})
    out = tmp_path / "clocks.csv"
    assert write_clocks_table(expand_studies(config), str(out)) == 4 + 4
    rows = {(r["study"], r["config_id"]): r for r in csv.DictReader(out.open())}
    row = rows[("main", "sgd_b16")]
    assert int(row["runs"]) == 4 and float(row["T_sgd"]) == run_clocks({**config["defaults"], "batch_size": 16, "n_train": 64})["T_sgd"]
    assert rows[("main", "adam_b32")]["governing_clock"] == "T_adapt"
    assert rows[("lr_l2", "lr0.1_l20.01")]["governing_clock"] == "T_l2" and float(rows[("lr_l2", "lr0.1_l20.01")]["T_l2"]) > 0
