"""The forgetting-clock calculator: the trainer's own sums, the paper's quoted clocks, the CLI and clocks.csv."""

import csv
import math
from pathlib import Path

import pytest
from conftest import tiny_config, tiny_spec

from initmem.engine.clocks import CLOCK_KEYS, learning_rate, run_clocks, schedule_clocks, schedule_moments
from initmem.pipeline.grid import expand_studies
from initmem.theory.calculator import (
    CLOCK_NAMES,
    clocks_table,
    governing_clock,
    nearest_point,
    paper_points,
    recipe,
    recipe_kind,
    report,
    write_clocks_table,
)


@pytest.mark.parametrize("overrides", [dict(optimizer="adamw", l2=1e-3, epochs=3, batch_size=40),
                                       dict(optimizer="sgd", schedule="constant", lr=0.02, epochs=2, batch_size=32)])
def test_calculator_equals_the_trainers_recorded_clocks(tiny_tensors, overrides):
    from initmem.engine.train import train_run

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


def _calls(fn) -> int:
    """Python and C function calls made by ``fn()``: a count of operations that, unlike a wall-clock
    limit, does not depend on how busy the machine is."""
    import sys

    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def _peak_bytes(fn) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_any_recipe_costs_constant_time_and_memory():
    big = recipe(lr=1e-2, batch_size=1, epochs=5000, n_train=40000)  # 2e8 steps
    c = run_clocks(big)
    assert c["total_steps"] == 200_000_000
    assert c["T_adapt"] == pytest.approx(1e-2 * (0.505 * 2e8 + 0.495), rel=1e-12)  # lr0 (a K + c sum cos), sum cos = 1
    small = recipe(lr=1e-2, batch_size=1, epochs=1, n_train=40)  # 40 steps
    assert _calls(lambda: run_clocks(big)) == _calls(lambda: run_clocks(small))  # closed forms: no loop over steps
    assert _peak_bytes(lambda: run_clocks(big)) < 1_000_000


def test_schedule_clocks_refuse_steps_outside_the_schedule():
    with pytest.raises(ValueError, match="steps_done = 11"):
        schedule_clocks(recipe(), 10, 11, 0.0)
    with pytest.raises(ValueError, match="unknown schedule 'step'"):
        schedule_moments(1.0, "step", 0.0, 10, 5)


def test_paper_quoted_clocks_are_the_constant_lr_arithmetic():
    # Sec. 4.2: 7.3e-4 and 1.2e-2 (SGD b 128), 4.7 (b 16, eta 1e-2), T_L2 0.94 and 4.7 (b 128, eta 1e-2)
    quoted = [(p, clock, value) for p in paper_points() for clock, value in p["quoted"].items()]
    assert len(quoted) == 5
    for p, clock, value in quoted:
        assert p["constant_lr"][clock] == pytest.approx(value, rel=0.03), p["spec"]


def test_paper_points_exact_clocks_under_their_own_schedules():
    # exact, not the constant-lr arithmetic: T_SGD of b 16, eta 1e-2 (cosine) is 1.77, not 4.7; the T_L2 points
    # the paper quotes as 0.94 and 4.7 are 0.474 and 2.37 under cosine; the 5,000-epoch control ran at constant lr
    exact = {(p["spec"]["batch_size"], p["spec"]["lr"], p["spec"]["l2"], p["spec"]["epochs"], p["spec"]["optimizer"]): p["exact"]
             for p in paper_points()}
    assert exact[(16, 1e-2, 0.0, 300, "sgd")]["T_sgd"] == pytest.approx(1.770, rel=1e-3)
    assert exact[(128, 1e-2, 1e-3, 300, "sgd")]["T_l2"] == pytest.approx(0.4742, rel=1e-3)
    assert exact[(128, 1e-2, 5e-3, 300, "sgd")]["T_l2"] == pytest.approx(2.371, rel=1e-3)
    assert exact[(128, 1e-3, 0.0, 5000, "sgd")]["T_sgd"] == pytest.approx(5000 * 313 * 1e-6 / 128, rel=1e-12)
    assert exact[(128, 0.1, 0.0, 200, "sgd_momentum")]["T_wd"] == pytest.approx(1.5807, rel=1e-4)


def test_calculator_table_claims_and_a_trained_run_agree(tiny_tensors, tmp_path, capsys):
    """One clock everywhere: a trained run's record, clocks.csv, the calculator's printout, the claims'
    timescale rows and the paper points (exact and constant-lr) agree to float rounding."""
    from initmem.claims.catalogue.timescales import TIMESCALE_CLAIMS
    from initmem.claims.catalogue.timescales import rows as timescale_claims
    from initmem.cli import main
    from initmem.engine.train import train_run

    recipe_ = dict(optimizer="sgd_momentum", lr=0.03, weight_decay=2e-3, epochs=3, batch_size=40)
    history = train_run(tiny_spec(**recipe_, n_train=96), tiny_tensors, log=None)["history"]
    config = tiny_config({"main": {"grid": {"sigma_w": [1.0], "seed": [0]}}},
                         data={"source": "synthetic", "n_train": 96, "n_val": 48, "n_test": 48}, **recipe_)
    out = tmp_path / "clocks.csv"
    write_clocks_table(expand_studies(config), str(out))
    (row,) = csv.DictReader(out.open())
    with pytest.raises(SystemExit):
        main(["clocks", "--optimizer", "sgd_momentum", "--lr", "0.03", "--weight-decay", "2e-3", "--epochs", "3",
              "--batch-size", "40", "--n-train", "96"])
    printed = capsys.readouterr().out
    for key, name in (("T_sgd", "T_SGD  "), ("T_wd", "T_wd   "), ("T_adapt", "T_adapt")):
        recorded = history[key][-1]
        assert recorded > 0
        assert float(row[key]) == recorded  # the CSV holds the trainer's number, bit for bit
        assert f"{name} = sum" in printed and f"= {recorded:.6g}" in printed
    # the claims' timescale rows: exact_as_run and reproduced are the calculator's paper points, like with like
    points = {(p["spec"]["batch_size"], p["spec"]["epochs"], p["spec"]["lr"], p["spec"]["l2"], p["spec"]["schedule"]): p
              for p in paper_points() if p["spec"]["optimizer"] == "sgd"}
    rows = {r["id"]: r for r in timescale_claims()}
    assert len(rows) == len(TIMESCALE_CLAIMS) == 5
    for cid, _, paper, clock, b, e, lr, l2, schedule in TIMESCALE_CLAIMS:
        p = points[(b, e, lr, l2, schedule)]
        assert rows[cid]["exact_as_run"] == pytest.approx(p["exact"][clock], rel=1e-15, abs=0)
        assert rows[cid]["reproduced"] == pytest.approx(p["constant_lr"][clock], rel=1e-15, abs=0)
        assert p["quoted"][clock] == paper  # the calculator brackets the same number the claims quote


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
    (["--lr", "inf", "--batch-size", "16", "--epochs", "3"], "lr = inf must be a finite number"),
    (["--lr", "1e-2", "--batch-size", "0", "--epochs", "3"], "batch_size = 0 must be an integer >= 1"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "0"], "epochs = 0 must be an integer >= 1"),
    (["--lr", "1e-2", "--batch-size", "1.5", "--epochs", "3"], "invalid int value: '1.5'"),
    (["--lr", "1e-2", "--batch-size", "50000", "--epochs", "3"], "batch_size = 50000 must not exceed n_train = 40000"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "3", "--n-train", "50000"], "n_train = 50000 must be an integer >= 1 and <= 40000"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "3", "--alpha", "2"], "alpha = 2.0 must be a number in [0, 1]"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "3", "--alpha", "-0.1"], "alpha = -0.1 must be a number in [0, 1]"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "3", "--momentum", "1.5"], "momentum = 1.5 must be a number in [0, 1]"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "3", "--l2", "-1"], "l2 = -1.0 must be a number >= 0"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "3", "--weight-decay", "nan"], "weight_decay = nan must be a finite number"),
    (["--optimizer", "rmsprop", "--lr", "1e-2", "--batch-size", "16", "--epochs", "3"], "unknown optimizer 'rmsprop'"),
    (["--lr", "1e-2", "--batch-size", "16", "--epochs", "3", "--schedule", "step"], "unknown schedule 'step'"),
    (["--lr", "abc", "--batch-size", "16", "--epochs", "3"], "invalid float value: 'abc'"),
])
def test_cli_bad_input_is_one_line_naming_the_value(capsys, args, message):
    from initmem.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["clocks", *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err, err


def test_cli_into_a_closed_pipe_stops_quietly():
    # `python -m initmem clocks ... | head -1`: the reader closes before the printout is written
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "workflow")}
    proc = subprocess.Popen([sys.executable, "-m", "initmem", "clocks", "--lr", "1e-2", "--batch-size", "16", "--epochs", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and err == ""


def test_nearest_point_distance_and_out_of_range_on_a_small_config():
    # a small config's SGD b 128 (lr 1e-3, 6 epochs, 512 images): T_SGD 7.5e-8, three orders below the paper's lowest SGD point
    config = tiny_config({"main": {"grid": {"optimizer": ["sgd"], "batch_size": [128], "sigma_w": [1.0], "seed": [0]}},
                          "lr_l2": {"grid": {"lr": [1e-3, 1e-2], "l2": [0.0, 1e-2], "batch_size": [128], "sigma_w": [1.0], "seed": [0]}}},
                         data={"source": "synthetic", "n_train": 512, "n_val": 32, "n_test": 32}, lr=1e-3, epochs=6)
    rows = {(r["study"], r["config_id"]): r for r in clocks_table(expand_studies(config))}
    row = rows[("main", "sgd_b128")]
    assert row["governing_clock"] == "T_sgd" and row["T_sgd"] == pytest.approx(7.47e-8, rel=1e-3)
    assert row["paper_nearest_exact"] == pytest.approx(6.946e-5, rel=1e-3) and row["paper_nearest_spread_pp"] == "25.7"
    assert row["paper_nearest_orders"] == pytest.approx(math.log10(6.946e-5 / 7.469e-8), abs=1e-3)  # 2.97
    assert row["out_of_range"] is True
    l2 = rows[("lr_l2", "lr0.001_l20.01_b128")]  # T_L2 1.3e-4 against the paper's 0.47 (17.4 pp)
    assert l2["governing_clock"] == "T_l2" and l2["paper_nearest_orders"] > 3 and l2["out_of_range"] is True
    near = rows[("lr_l2", "lr0.01_l20_b128")]  # T_SGD 7.5e-6, 0.97 orders from 6.9e-5: inside the stated distance
    assert near["paper_nearest_orders"] == pytest.approx(0.97, abs=0.01) and near["out_of_range"] is False
    # a paper recipe itself is at distance 0 from its own point
    hit = nearest_point(recipe(lr=1e-2, batch_size=16), "T_sgd", run_clocks(recipe(lr=1e-2, batch_size=16))["T_sgd"])
    assert hit["orders"] == 0 and hit["point"]["spread_pp"] == "9.7" and not hit["out_of_range"]


def test_the_printout_flags_an_out_of_range_recipe():
    text = report(recipe(lr=1e-3, batch_size=128, epochs=6, n_train=512))
    assert "2.97 orders of magnitude from 7.469e-08  OUT OF RANGE" in text
    assert "OUT OF RANGE" not in report(recipe(lr=1e-2, batch_size=16))


@pytest.mark.parametrize("overrides,clock", [
    (dict(optimizer="sgd_momentum", lr=0.1, epochs=200, weight_decay=5e-4), "T_sgd"),  # the paper's best recipe: 1.85 vs T_wd 1.58
    (dict(optimizer="sgd_momentum", lr=0.1, epochs=200, weight_decay=5e-3), "T_wd"),  # ten times the decay: T_wd 15.8
    (dict(optimizer="sgd", lr=1e-2, weight_decay=1e-3), "T_wd"),  # T_wd 0.47 against T_SGD 0.028
    (dict(optimizer="sgd", lr=1e-2, l2=1e-3), "T_l2"),
    (dict(optimizer="sgd", lr=0.1, batch_size=16, l2=1e-4), "T_sgd"),  # T_SGD 177 dwarfs T_L2 0.38
    (dict(optimizer="adamw", weight_decay=1e-1), "T_adapt"),  # adaptive: T_adapt whatever the decay
])
def test_governing_clock_accounts_for_weight_decay(overrides, clock):
    spec = recipe(**overrides)
    assert governing_clock(spec) == clock
    assert f"governing clock: {CLOCK_NAMES[clock]} = " in report(spec)


def test_momentum_is_stated_not_folded_in():
    spec = recipe(optimizer="sgd_momentum", lr=0.1, epochs=200, weight_decay=5e-4)
    text = report(spec)
    assert "momentum 0.9: the clocks above use the raw eta_k" in text and "10x larger effective steps" in text
    assert run_clocks(spec)["T_sgd"] == run_clocks({**spec, "optimizer": "sgd"})["T_sgd"]  # the raw eta, not eta / (1 - m)
    assert "momentum" not in report(recipe(lr=1e-2))


def test_ladder_places_an_l2_recipe_only_among_l2_points():
    # eta 1e-2, b 128, L2 1e-3 has the T_SGD of the no-L2 point at 23.8 pp: it must not be marked beside it
    text = report(recipe(lr=1e-2, l2=1e-3))
    ladder = text[text.index("The paper's measured points of this kind (sgd+L2)"):]
    assert "23.8 pp" not in ladder and "26.5 pp" not in ladder
    points = [line for line in ladder.splitlines() if " spread " in line]
    assert len(points) == 8 and all(", L2 " in line for line in points)  # 4 L2 points on T_SGD and on T_L2
    marked = [line for line in ladder.splitlines() if "<- this recipe" in line]
    assert marked and all(", L2 " in line for line in marked)
    # a recipe of a kind the paper never measured is placed on no ladder
    assert "none: the paper measured no recipe of this kind" in report(recipe(lr=1e-2, weight_decay=1e-3))
    assert recipe_kind(recipe(lr=1e-2, weight_decay=1e-3)) == "sgd+wd"


def test_the_printout_labels_both_conventions():
    text = report(recipe(lr=1e-2, l2=1e-3))
    assert "exact clocks under this recipe's own schedule (the sums the trainer records):" in text
    assert "T_L2    = sum eta_k * l2   = 0.4742" in text
    assert "constant-lr arithmetic" in text and "K = 93750" in text and "T_L2 0.9375" in text
    assert "0.4742  spread  17.4 pp" in text and "[paper, constant-lr: 0.94]" in text


def test_a_b1_5000_epoch_printout_is_fast_and_small():
    big = recipe(lr=1e-2, batch_size=1, epochs=5000)
    assert "200000000 in all" in report(big)
    # as cheap as 5 epochs (give or take a number's formatting): nothing loops over the 2e8 steps
    assert _calls(lambda: report(big)) <= 1.1 * _calls(lambda: report(recipe(lr=1e-2, batch_size=1, epochs=5)))
    assert _peak_bytes(lambda: report(big)) < 4_000_000


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
