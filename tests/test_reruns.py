"""What makes a run retrain, driven through real Snakemake runs of a tiny config: only new runs are
planned when a seed or sigma_w is added; bookkeeping settings, moving the directory and editing
analysis code retrain nothing; editing the trainer retrains everything; a damaged pack or metrics
file costs no good file; outputs follow the umask; logs keep every attempt."""

import copy
import json
import os
import re
import shutil
import stat
import subprocess

import pytest
import yaml
from conftest import ROOT, TINY_PIPELINE, job_counts, mark_incomplete, project_copy, snakemake, tiny_config, workdir_copy

BASE = TINY_PIPELINE  # 12 runs in 3 packs of 4 (SGD, Adam, Lion), one epoch
PACKS = 3


def _write(work, cfg):
    (work / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _plan(work, *targets):
    """Job counts of a dry run (``{}`` when there is nothing to be done)."""
    out = snakemake(*(targets or ("runs",)), "-n", "--configfile", "c.yaml", "--quiet", "rules", cwd=work)
    text = out.stdout + out.stderr
    return {} if "Nothing to be done" in text else job_counts(text)


@pytest.fixture
def work(tiny_pipeline, tmp_path):
    """A copy of the finished tiny pipeline (mtimes and Snakemake's metadata kept) to change."""
    return project_copy(tiny_pipeline, tmp_path / "project")


@pytest.mark.slow
@pytest.mark.workflow
@pytest.mark.parametrize("axis, values", [("seed", [0, 1, 2]), ("sigma_w", [0.5, 1.0, 2.0])])
def test_adding_a_seed_or_sigma_trains_only_the_new_runs(work, axis, values):
    cfg = copy.deepcopy(BASE)
    cfg["studies"]["main"]["grid"][axis] = values
    _write(work, cfg)
    counts = _plan(work)
    assert counts["run_metrics"] == 6 and counts["train"] == PACKS  # the new runs, in one new pack per optimizer


@pytest.mark.slow
@pytest.mark.workflow
def test_a_new_optimizer_at_its_own_lr_appended_as_a_grid_trains_only_its_runs(work):
    """The grid list that gives one optimizer its own lr: the finished runs keep their ids and their
    metrics files (bytes and mtimes), the dry run plans the new optimizer's runs alone, and one
    invocation trains them."""
    finished = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (work / "results/runs/main").glob("*.json")}
    assert len(finished) == 12
    cfg = copy.deepcopy(BASE)
    main = cfg["studies"]["main"]
    main["grid"] = [main["grid"], {"optimizer": ["sgd_momentum"], "lr": [1e-2], "batch_size": [16],
                                   "sigma_w": [0.5, 2.0], "seed": [0, 1]}]
    _write(work, cfg)
    counts = _plan(work)
    assert counts["train"] == 1 and counts["run_metrics"] == 4 and "prepare_data" not in counts  # one new pack
    snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (work / "results/runs/main").glob("*.json")}
    assert {name: after[name] for name in finished} == finished
    assert sorted(set(after) - set(finished)) == [f"sgd-momentum_lr0.01_b16_sw{sw}_s{seed}.json"
                                                  for sw in ("0.5", "2") for seed in (0, 1)]
    assert _plan(work) == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_a_default_stated_in_a_grid_list_reuses_the_finished_runs(work):
    """The grid list whose first grid states the default lr renamed its 12 finished runs
    (sgd_b16_lr0.001_sw0.5_s0 for sgd_b16_sw0.5_s0) and planned them again. Their specs did not
    change: they are cut from the packs that trained them, under the new ids, and only the appended
    grid's pack trains."""
    trained = _trained_files(work)
    cfg = copy.deepcopy(BASE)
    main = cfg["studies"]["main"]
    main["grid"] = [{**main["grid"], "lr": [BASE["defaults"]["lr"]]},
                    {"optimizer": ["sgd_momentum"], "lr": [1e-2], "batch_size": [16], "sigma_w": [0.5, 2.0], "seed": [0, 1]}]
    _write(work, cfg)
    counts = _plan(work)
    assert counts["train"] == 1 and counts["run_metrics"] == 12 + 4  # the renamed runs cut, the new ones trained
    snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    after = _trained_files(work)
    assert {p: after[p] for p in trained} == trained  # no plan rewritten, no pack retrained
    runs = work / "results/runs/main"
    renamed = json.loads((runs / "sgd_b16_lr0.001_sw0.5_s0.json").read_text())
    original = json.loads((runs / "sgd_b16_sw0.5_s0.json").read_text())
    assert renamed["run_id"] == "sgd_b16_lr0.001_sw0.5_s0" and renamed["history"] == original["history"]
    assert _plan(work) == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_another_config_with_the_same_run_ids_keeps_both_records(work):
    """Another config whose runs have the same ids and other specs (here two epochs) reported
    `params have changed since last execution: run_metrics` in its dry run and cut its records over the
    first config's. Now its records go beside them (<run_id>~<tag>.json), and neither config has
    anything to do after the other ran."""
    runs = work / "results/runs/main"
    first = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in runs.glob("*.json")}
    other = copy.deepcopy(BASE)
    other["defaults"]["epochs"] = 2
    (work / "other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    dry = snakemake("runs", "-n", "--configfile", "other.yaml", cwd=work)
    text = dry.stdout + dry.stderr
    assert "params have changed" not in text.lower() and "--rerun-triggers" not in text
    counts = job_counts(text)
    assert counts["train"] == PACKS and counts["run_metrics"] == 12
    snakemake("runs", "--cores", "1", "--configfile", "other.yaml", cwd=work)
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in runs.glob("*.json")}
    assert {name: after[name] for name in first} == first  # the first config's records as they were
    tagged = sorted(set(after) - set(first))
    assert len(tagged) == 12 and all(name.split("~")[0] + ".json" in first for name in tagged)
    assert all(json.loads(after[name][1])["history"]["epoch"] == [1, 2] for name in tagged)
    assert _plan(work) == {}  # back to the first config: nothing to do
    again = snakemake("runs", "-n", "--configfile", "other.yaml", cwd=work)
    assert "Nothing to be done" in again.stdout + again.stderr


BOOKKEEPING = [
    ("checkpoint", "every_epochs", 5), ("checkpoint", "keep", True), ("pack", "max_images", 64),
    ("pack", "max_models", 2), ("pack", "engine", "vmap"), ("compute", "device", "auto"), ("compute", "threads", 2),
    ("compute", "compile", True), ("compute", "images_per_second", 5.0), ("compute", "max_runtime_minutes", 600),
    ("compute", "rate_table", None), ("checkpoint", "every_minutes", 30), ("data", "seed", 0),
    ("compute", "memory_format", "channels_last"),
]


@pytest.mark.slow
@pytest.mark.workflow
def test_bookkeeping_settings_retrain_nothing(work):
    """All of them changed at once (one dry run: each Snakemake start costs seconds): nothing to do."""
    cfg = copy.deepcopy(BASE)
    for section, key, value in BOOKKEEPING:
        cfg[section][key] = value
    _write(work, cfg)
    assert _plan(work) == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_precision_is_part_of_a_runs_identity(work):
    cfg = copy.deepcopy(BASE)
    cfg["compute"]["precision"] = "bf16"
    _write(work, cfg)
    counts = _plan(work)
    assert counts["train"] == PACKS and counts["run_metrics"] == 12


@pytest.mark.slow
@pytest.mark.workflow
def test_moving_the_project_retrains_nothing(work, tmp_path):
    moved = tmp_path / "elsewhere" / "project"
    moved.parent.mkdir()
    shutil.move(work, moved)
    assert _plan(moved, "runs", "results/tables/studies/main.runs.csv") == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_touching_data_or_scripts_retrains_nothing(work):
    for path in [*(work / "results/data").glob("*/cifar10.npz"), *(work / "workflow/scripts").glob("*.py")]:
        os.utime(path)
    assert _plan(work) == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_editing_analysis_code_reruns_tables_not_training(work):
    with open(work / "workflow/initmem/claims/analysis.py", "a") as fh:
        fh.write("\n\ndef _a_new_helper():\n    return 1\n")
    counts = _plan(work, "runs", "results/tables/studies/main.runs.csv")
    assert counts.get("collect_study") == 1 and "train" not in counts and "run_metrics" not in counts


@pytest.mark.slow
@pytest.mark.workflow
def test_editing_the_trainer_retrains_every_pack(work):
    with open(work / "workflow/initmem/engine/train.py", "a") as fh:
        fh.write("\n\nA_FIXED_BUG = True\n")
    counts = _plan(work)
    assert counts["train"] == PACKS and counts["run_metrics"] == 12
    # a comment or docstring is not code
    work2 = work.parent / "comment"
    shutil.copytree(work, work2, symlinks=True)
    text = (work2 / "workflow/initmem/engine/train.py").read_text().replace("\n\nA_FIXED_BUG = True\n", "\n# a reworded comment\n")
    (work2 / "workflow/initmem/engine/train.py").write_text(text)
    assert _plan(work2) == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_truncated_pack_file_keeps_its_intact_run_files(work):
    pack = next((work / "results/packs/main").glob("*.json"))
    runs = _runs_of(work, pack)
    pack.write_text(pack.read_text()[:200])  # truncated, and newer than the run files
    assert _plan(work) == {}
    assert all(r.stat().st_size > 1000 for r in runs)
    # a run file that must be cut from it again: the error names the pack and a repair command that
    # works as printed (the same config file, cores, the target first)
    runs[0].unlink()
    proc = snakemake(str(runs[0].relative_to(work)), "--cores", "1", "--configfile", "c.yaml", cwd=work, check=False)
    log = (work / "results/logs/runs/main" / runs[0].name.replace(".json", ".log")).read_text()
    assert proc.returncode != 0 and f"{pack.relative_to(work)}: damaged pack file" in log
    assert all(r.is_file() for r in runs[1:])
    _run_repair(log, work)
    assert runs[0].stat().st_size > 1000 and _plan(work) == {}


def _runs_of(work, pack) -> list:
    """The run files cut from one pack file, in order."""
    members = json.loads((work / "results/plans/main" / pack.name).read_text())["members"]
    return sorted(work / "results/runs/main" / f"{m['run_id']}.json" for m in members)


def _run_repair(message: str, work) -> None:
    """Run the repair command a message prints, verbatim, in the project."""
    command = re.search(r"(rm \S+ && \S+ (?:-m snakemake )?--cores .*?)(?:\n|$)", message).group(1)
    assert "--configfile c.yaml" in command, command
    proc = subprocess.run(command, shell=True, cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


@pytest.mark.slow
@pytest.mark.workflow
def test_corrupt_metrics_file_is_named_and_the_printed_repair_works(work):
    snakemake("--cores", "1", "--configfile", "c.yaml", cwd=work)  # every table and figure
    run = next((work / "results/runs/main").glob("*.json"))
    good = run.read_text()
    run.write_text(good[:100])
    os.utime(run, ns=(run.stat().st_atime_ns, (work / "results/tables/studies/main.runs.csv").stat().st_mtime_ns - 10**9))
    proc = snakemake("results/tables/studies/main.runs.csv", "--cores", "1", "--forcerun", "collect_study", "--configfile", "c.yaml",
                     cwd=work, check=False)
    log = (work / "results/logs/collect/main.log").read_text()
    assert proc.returncode != 0 and str(run.relative_to(work)) in log
    # the failed collection removed the study's tables, while the tables and figures made from them
    # are still there: a plain rerun makes them again (and fails again, saying the same), where it
    # used to say "Nothing to be done"
    again = snakemake("-n", "--configfile", "c.yaml", cwd=work)
    assert "collect_study" in again.stdout
    _run_repair(log, work)  # rm the file && snakemake --cores 1 <the study table> runs ... --configfile c.yaml
    assert run.read_text() == good
    assert (work / "results/tables/studies/main.runs.csv").stat().st_size > 100


@pytest.mark.slow
@pytest.mark.workflow
def test_an_empty_table_is_an_error_with_a_repair_that_works(work):
    table = work / "results/tables/studies/main.runs.csv"
    table.write_text("")
    proc = snakemake("runs", "-n", "--configfile", "c.yaml", cwd=work, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "results/tables/studies/main.runs.csv: empty (damaged)" in text
    _run_repair(text, work)
    assert table.stat().st_size > 100


@pytest.mark.slow
@pytest.mark.workflow
def test_the_same_command_goes_on_after_an_interruption(work):
    """Ctrl-C between a job's write and Snakemake's bookkeeping leaves a complete file marked
    incomplete; the same command (the workflow profile passes --rerun-incomplete) finishes."""
    run = next((work / "results/runs/main").glob("*.json"))
    mark_incomplete(work, run)
    proc = snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=work, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "rule train:" not in proc.stdout + proc.stderr  # nothing retrains: the run is cut again from its pack
    assert run.stat().st_size > 1000 and _plan(work) == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_a_finished_pack_marked_incomplete_is_kept_and_the_same_command_does_the_rest(work):
    """A pack file written whole but marked incomplete (Ctrl-C as its job ended): the next invocation
    plans every remaining job (not that pack's job alone), retrains nothing finished, and completes."""
    cfg = copy.deepcopy(BASE)
    cfg["studies"]["main"]["grid"]["seed"] = [0, 1, 2]  # one more pack to train
    _write(work, cfg)
    remaining = _plan(work)
    assert remaining["train"] == PACKS and remaining["run_metrics"] == 6
    pack = next((work / "results/packs/main").glob("*.json"))
    finished = [pack, *(work / "results/runs/main").glob("*.json")]
    before = {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in finished}
    mark_incomplete(work, pack)
    assert _plan(work) == remaining
    mark_incomplete(work, pack)  # the dry run let go of the marker: the real invocation meets it too
    proc = snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    assert (proc.stdout + proc.stderr).count("rule train:") == PACKS  # the new packs only
    assert {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in finished} == before
    assert len(list((work / "results/runs/main").glob("*.json"))) == 18 and _plan(work) == {}


@pytest.mark.slow
@pytest.mark.workflow
def test_a_data_change_is_planned_and_trained_in_one_invocation(work):
    """Snakemake hid the training behind a rerun of prepare_data: one call prepared the data and
    said "100% done", only a second trained."""
    cfg = copy.deepcopy(BASE)
    cfg["data"]["n_train"] = 48
    _write(work, cfg)
    counts = _plan(work)  # one dry run shows all of it
    assert counts["prepare_data"] == 1 and counts["train"] == PACKS and counts["run_metrics"] == 12
    snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=work)  # one real run does all of it
    assert _plan(work) == {}
    # other data under the same run ids: its records go beside the first data's, which stay (initmem.pipeline.runfiles)
    runs = work / "results/runs/main"
    records = [json.loads(p.read_text()) for p in runs.glob("*~*.json")]
    assert len(records) == 12 and all(r["spec"]["n_train"] == 48 and r["history"]["epoch"] == [1] for r in records)
    assert {json.loads(p.read_text())["spec"]["n_train"] for p in runs.glob("*.json") if "~" not in p.name} == {64}


def _trained_files(work) -> dict:
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for d in ("data", "plans", "packs") for p in (work / "results" / d).rglob("*.*")}


@pytest.mark.slow
@pytest.mark.workflow
def test_another_configs_invocation_deletes_and_retrains_nothing(work):
    """One invocation with another config whose data cannot be prepared (it used
    to delete the prepared data and rewrite the plans), then back: zero packs retrained."""
    before = _trained_files(work)
    other = copy.deepcopy(BASE)  # the same sizes: the same run specs, another data identity
    (work / "copy.tar.gz").write_bytes(b"not an archive")
    other["data"] = {"source": "archive", "archive": "copy.tar.gz", "verify_md5": False, "n_train": 64, "n_val": 32, "n_test": 32}
    (work / "other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    proc = snakemake("runs", "--cores", "1", "--keep-going", "--configfile", "other.yaml", cwd=work, check=False)
    assert proc.returncode != 0  # prepare_data fails on the bad archive
    after = _trained_files(work)
    assert {p: v for p, v in after.items() if p in before} == before  # nothing of the first config touched
    assert _plan(work) == {}  # back to the first config: zero packs to retrain, nothing to do


@pytest.mark.slow
@pytest.mark.workflow
def test_a_named_config_files_its_outputs_apart_and_trains_nothing_twice(work):
    """`name:` files a config's tables and figures under results/<name>/ and figures/<name>/; the
    runs themselves are shared (their keys decide), and every invocation records its config."""
    default_table = work / "results/tables/studies/main.runs.csv"
    before = default_table.read_bytes()
    mine = copy.deepcopy(BASE)
    mine["name"] = "mine"
    _write(work, mine)
    plan = _plan(work, "results/mine/tables/studies/main.runs.csv")
    assert plan == {"collect_study": 1, "total": 1}  # nothing trains: the same runs
    snakemake("results/mine/tables/studies/main.runs.csv", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    assert (work / "results/mine/tables/studies/main.runs.csv").read_bytes() == before  # the same runs, apart
    assert yaml.safe_load((work / "results/mine/config.resolved.yaml").read_text())["name"] == "mine"  # any target records it
    # another config in the default folder: said once, with the fix
    other = copy.deepcopy(BASE)
    other["defaults"]["lr"] = 0.02
    _write(work, other)
    # an invocation that runs no job records nothing (provenance is written after the jobs): the record itself, forced
    snakemake("-f", "results/config.resolved.yaml", "--cores", "1", "--configfile", "c.yaml", cwd=work)
    _write(work, BASE)
    proc = snakemake("-n", "runs", "--configfile", "c.yaml", cwd=work)
    assert "NOTE: results/config.resolved.yaml was written by a config with other defaults" in proc.stderr


@pytest.mark.slow
@pytest.mark.workflow
def test_a_reserved_output_name_is_refused(tmp_path):
    work = workdir_copy(tmp_path)
    (work / "c.yaml").write_text("name: runs\n")
    proc = snakemake("-n", "--configfile", "c.yaml", cwd=work, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "invalid config: name:" in text and "c.yaml)" in text


OLD_CHECKOUT = "ee9aefd"  # the last commit with one shared results/data/cifar10.npz
# a config that checkout knows (no Lion, no data.resolution): 4 runs in one pack
OLD_CONFIG = tiny_config({"main": {"grid": {"optimizer": ["sgd"], "batch_size": [16], "sigma_w": [0.5, 2.0], "seed": [0, 1]}}},
                         pack=4, epochs=1, width=4)
OLD_CONFIG["pack"]["engine"] = "loop"


@pytest.mark.slow
@pytest.mark.workflow
def test_an_older_checkouts_prepared_data_is_moved_and_nothing_retrains(tmp_path):
    old = tmp_path / "project"
    old.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_CHECKOUT, "Snakefile", "workflow", "config", "envs", "profiles"],
                             capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"commit {OLD_CHECKOUT} is not in this clone's history")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    _write(old, OLD_CONFIG)
    snakemake("runs", "--cores", "1", "--configfile", "c.yaml", cwd=old)
    assert (old / "results/data/cifar10.npz").is_file()
    packs = {p: p.stat().st_mtime_ns for p in (old / "results/packs").rglob("*.json")}
    for name in ("Snakefile", "workflow", "config", "envs", "profiles"):  # pull this version
        shutil.rmtree(old / name) if (old / name).is_dir() else (old / name).unlink()
    workdir_copy(old)
    proc = snakemake("runs", "-n", "--configfile", "c.yaml", "--quiet", "rules", cwd=old)
    assert "moved results/data/cifar10.npz" in proc.stderr
    assert not (old / "results/data/cifar10.npz").exists() and len(list((old / "results/data").glob("*/cifar10.npz"))) == 1
    counts = job_counts(proc.stdout) if "Job stats:" in proc.stdout else {}
    assert "prepare_data" not in counts  # the moved file is this config's data: nothing is prepared again
    # The trainer's code changed since OLD_CHECKOUT (the engine itself), so each pack
    # retrains once for that alone (new run keys); with the same trainer code this dry run said
    # "Nothing to be done" (checked when the migration was written, at 9371103).
    assert counts.get("train", 0) == len(packs)


@pytest.mark.slow
@pytest.mark.workflow
def test_outputs_follow_the_umask_and_logs_keep_every_attempt(work):
    for path in [*(work / "results/data").glob("*/cifar10.npz"), *(work / "results/runs/main").glob("*.json"),
                 *(work / "results/packs/main").glob("*.json"), work / "results/tables/studies/main.runs.csv"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask(), path
    pack = next((work / "results/packs/main").glob("*.json"))
    kept = work / "results/plans/main" / pack.name.replace(".json", ".finished")
    # --forcerun alone finds the finished pack kept beside its plan and trains nothing (docs/resilience.md);
    # deleting that copy too, as the docs say to force a retrain, trains it again
    snakemake(str(pack.relative_to(work)), "--cores", "1", "--configfile", "c.yaml", "--forcerun", "train", cwd=work)
    log = (work / "results/logs/train/main" / pack.name.replace(".json", ".log")).read_text()
    assert "=== attempt 2:" in log and "declared it, nothing to train" in log and log.count("epoch 1/1") == 4
    kept.unlink()
    snakemake(str(pack.relative_to(work)), "--cores", "1", "--configfile", "c.yaml", "--forcerun", "train", cwd=work)
    log = (work / "results/logs/train/main" / pack.name.replace(".json", ".log")).read_text()
    assert "=== attempt 1:" in log and "=== attempt 3:" in log and log.count("epoch 1/1") == 8


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.slow
@pytest.mark.workflow
def test_profile_refuses_a_configfile_that_drops_its_studies(tmp_path):
    work = workdir_copy(tmp_path)
    shutil.copytree(ROOT / "slurm", work / "slurm")
    proc = snakemake("-n", "--profile", "slurm", "--configfile", "config/archive.yaml", cwd=work, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "replaces the configfiles of profile" in text
    assert "--configfile config/paper.yaml config/archive.yaml" in text


def test_the_same_runs_of_another_identity_never_resume_from_its_checkpoints(tmp_path, capfd):
    """Two configs with the same runs on other data (or trainer code) share run ids and specs; a
    checkpoint left by one must not be resumed by the other."""
    from conftest import tiny_spec

    from initmem.engine.data import build_splits, save_prepared
    from initmem.engine.settings import TrainSettings
    from initmem.pipeline.jobs import train_plan_file
    from initmem.pipeline.planning import write_plan

    data = tmp_path / "data.npz"
    save_prepared(build_splits({"source": "synthetic", "n_train": 32, "n_val": 16, "n_test": 16}), data)
    spec = tiny_spec(epochs=2, n_train=32, n_val=16, n_test=16)
    settings = TrainSettings.from_dict({"device": "cpu", "engine": "loop", "precision": "float32", "compile": False,
                                        "checkpoint_every": 1, "keep_checkpoints": True})
    for key in ("key-of-config-a", "key-of-config-b"):
        write_plan(tmp_path / f"{key}.plan.json", [{"run_id": "r", "spec": spec, "key": key}], data_id={"origin": key})
        train_plan_file(tmp_path / f"{key}.plan.json", data, tmp_path / f"{key}.pack.json", settings, checkpoint_dir=tmp_path / "ckpt")
    assert "resumed" not in capfd.readouterr().err
    assert len(list((tmp_path / "ckpt").glob("*/r.ckpt"))) == 2
