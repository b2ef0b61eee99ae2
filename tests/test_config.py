"""Config files as users write them: layered over the default, YAML 1.2 numbers, one-line errors."""

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from initmem.pipeline.configfiles import load_config, read_yaml
from initmem.spec import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((ROOT / "config/config.yaml").read_text())


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def initmem(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    return subprocess.run([sys.executable, "-m", "initmem", *args], cwd=ROOT, capture_output=True, text=True, env=env)


def test_a_studies_file_replaces_the_studies_and_keeps_the_default_settings(tmp_path):
    # the weight_decay_mode example of docs/configuration.md, saved as a file of its own
    f = write(tmp_path / "wd.yaml", "studies:\n  best_recipe:\n    grid: {weight_decay_mode: [decoupled, coupled], "
                                    "batch_size: [128], sigma_w: [0.1, 2.5], seed: [0, 1, 2]}\n")
    config = load_config([f])
    assert list(config["studies"]) == ["best_recipe"]  # no demo study of the default leaks in
    assert config["data"] == DEFAULT["data"] and config["pack"] == DEFAULT["pack"]


def test_settings_merge_key_by_key_and_later_files_win(tmp_path):
    a = write(tmp_path / "a.yaml", "defaults:\n  epochs: 50\ndata:\n  n_train: 1000\n")
    b = write(tmp_path / "b.yaml", "defaults:\n  lr: 1e-2\n")
    config = load_config([a, b], overrides={"compute": {"threads": 2}})
    assert config["defaults"] == {**DEFAULT["defaults"], "epochs": 50, "lr": 0.01}
    assert config["data"] == {**DEFAULT["data"], "n_train": 1000}
    assert config["compute"]["threads"] == 2 and config["studies"] == DEFAULT["studies"]


def test_every_shipped_full_config_is_complete_so_the_default_adds_nothing():
    # layering must not change what a paper or evidence config trains (run identity keys)
    sections = {"data", "defaults", "studies", "pack", "checkpoint", "compute"}
    full = [p for p in sorted((ROOT / "config").glob("*.yaml")) if p.name not in ("schema.yaml", "config.yaml")
            and sections <= set(read_yaml(p))]
    assert any(p.name == "paper.yaml" for p in full)
    for path in full:
        assert load_config([path]) == read_yaml(path), path.name


def test_yaml_1_2_numbers_are_numbers(tmp_path):
    f = write(tmp_path / "lr.yaml", "defaults:\n  lr: 1e-3\n  l2: 5E-4\nstudies:\n  main:\n    grid: {lr: [1e-2, 2.5e-1], sigma_w: [1e0], seed: [0]}\n")
    config = load_config([f])
    assert config["defaults"]["lr"] == 0.001 and config["defaults"]["l2"] == 0.0005
    assert config["studies"]["main"]["grid"] == {"lr": [0.01, 0.25], "sigma_w": [1.0], "seed": [0]}


@pytest.mark.parametrize("text, message", [
    ("defaults:\n  lr: 1e-3\n  epochs: [3\n", "bad.yaml:4:1: not valid YAML: expected ',' or ']'"),
    ("defaults:\n\tlr: 1e-3\n", "bad.yaml:2:1: not valid YAML: found character '\\t'"),
    ("- a\n- b\n", "bad.yaml: a config file must be a mapping"),
])
def test_a_malformed_file_is_named_with_its_line(tmp_path, text, message):
    with pytest.raises(ConfigError) as info:
        load_config([write(tmp_path / "bad.yaml", text)])
    assert message in str(info.value) and "\n" not in str(info.value)


# Each an invalid value of its own kind (an unknown registry name, a bound, an enum, a type, an unknown
# key), named in one line with the file that set it, never jsonschema's multi-line "Failed validating"
# dump. The workflow reads its config files with load_config (Snakefile); one of them through Snakemake:
# tests/test_workflow.py::test_a_schema_error_is_one_line_naming_the_key_and_its_file.
@pytest.mark.parametrize("text, message", [
    ("defaults:\n  optimizr: sgd\n", "defaults.optimizr: unknown key; known keys: arch, width"),
    ("defaults:\n  lr: fast\n", "defaults.lr: 'fast' is not of type 'number'"),
    ("studies:\n  s:\n    grid: {optimizer: [lamb], sigma_w: [1.0], seed: [0]}\n", "studies.s.grid.optimizer.0: 'lamb' is not one of"),
    ("pack:\n  engine: jax\n", "pack.engine: 'jax' is not one of ['vmap', 'loop']"),
    ("defaults:\n  optimizer: lamb\n", "lamb"),
    ("defaults:\n  epochs: -3\n", "epochs"),
    ("pack:\n  max_models: 0\n", "max_models"),
    ("compute:\n  precision: fp8\n", "precision"),
    ("compute:\n  compile: maybe\n", "compile"),
    ("data:\n  colour: red\n", "colour"),
])
def test_a_bad_key_is_one_line_naming_it_and_its_file(tmp_path, text, message):
    f = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config([f])
    assert message in str(info.value) and f"(set in {f})" in str(info.value)
    assert "Failed validating" not in str(info.value) and "\n" not in str(info.value)  # one line, not a dump of the schema


def test_estimate_blames_the_real_key_in_one_line_with_exit_2(tmp_path):
    # a typo in defaults used to be reported under the first study that inherited it
    proc = initmem("estimate", str(write(tmp_path / "p.yaml", "defaults:\n  optimizr: sgd\n")), "--images-per-second", "100")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("initmem estimate: error: defaults.optimizr: unknown key")
    proc = initmem("estimate", str(write(tmp_path / "m.yaml", "data: [\n")), "--images-per-second", "100")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "m.yaml:2:1: not valid YAML" in proc.stderr
    proc = initmem("estimate", "config/paper.yaml", "--images-per-second", "fast")
    assert proc.returncode == 2 and proc.stderr.strip() == "initmem estimate: error: argument --images-per-second: invalid float value: 'fast'"


def test_config_command_prints_what_the_workflow_would_use(tmp_path):
    proc = initmem("config", "config/paper.yaml", "config/archive.yaml")
    assert proc.returncode == 0, proc.stderr
    config = yaml.safe_load(proc.stdout)
    assert config["data"]["source"] == "archive" and config["data"]["n_train"] == 40000 and len(config["studies"]) == 6


@pytest.mark.parametrize("argv, cores, expected", [
    ([".venv/bin/snakemake", "figures/fig6.pdf", "--configfile", "a.yaml"], 2,
     ".venv/bin/snakemake --cores 2 results/runs/main/x.json figures/fig6.pdf --configfile a.yaml b.yaml"),
    (["snakemake", "--profile", "slurm", "figures/fig6.pdf"], None,
     "snakemake --profile slurm results/runs/main/x.json figures/fig6.pdf --configfile a.yaml b.yaml"),
    (["/x/site-packages/snakemake/__main__.py", "--cores", "1"], 1,
     "/usr/bin/python3 -m snakemake --cores 1 results/runs/main/x.json all --configfile a.yaml b.yaml"),
])
def test_repair_commands_repeat_the_invocation_target_first(monkeypatch, tmp_path, argv, cores, expected):
    """A repair command names the way Snakemake was started, the cores or profile, the same config
    files (as Snakemake resolved them, a profile's included) and the invocation's targets, with the
    new target first: `--configfile a.yaml results/...json` would read the target as a config file."""
    import json

    from initmem.pipeline.guards import INVOCATION_ENV, invocation, snakemake_command

    targets = [a for a in argv[1:] if a.startswith("figures/")]
    inv = invocation(argv, [tmp_path / "a.yaml", "b.yaml"], targets, cores, tmp_path, executable="/usr/bin/python3")
    monkeypatch.setenv(INVOCATION_ENV, json.dumps(inv))
    assert snakemake_command("results/runs/main/x.json", keep_targets=True) == expected


def test_an_older_checkouts_data_without_snakemakes_record_is_left_alone(tmp_path):
    from initmem.pipeline.legacy import migrate_legacy_data

    (tmp_path / "results/data").mkdir(parents=True)
    (tmp_path / "results/data/cifar10.npz").write_bytes(b"old")
    note = migrate_legacy_data(tmp_path, lambda identity, code: "x")
    assert "no record of which data it holds" in note and (tmp_path / "results/data/cifar10.npz").read_bytes() == b"old"
    assert migrate_legacy_data(tmp_path / "elsewhere", lambda identity, code: "x") is None


def test_an_edited_named_config_gets_no_note_about_another_config(tmp_path):
    # a config with `name:` owns its folder: its own earlier version is no other config; without a
    # name, another config's record in the shared folder is said, once
    from initmem.pipeline.configfiles import outputs_of_another_config
    from initmem.pipeline.invocation import record_provenance

    before = load_config([])
    edited = copy.deepcopy(before)
    edited["defaults"]["epochs"] = before["defaults"]["epochs"] + 1
    record_provenance(tmp_path / "mine.yaml", {**before, "name": "mine"}, ["mine.yaml"])
    assert outputs_of_another_config(tmp_path / "mine.yaml", {**edited, "name": "mine"}) is None
    record_provenance(tmp_path / "default.yaml", before, [])
    assert "written by a config with other defaults" in outputs_of_another_config(tmp_path / "default.yaml", edited)


def test_the_provenance_record_reads_back_as_the_config_and_names_its_config_files(tmp_path):
    from initmem.pipeline.invocation import other_data_hint, read_provenance, record_provenance

    tiny = load_config([ROOT / "config/tiny.yaml"])
    record_provenance(tmp_path / "results/config.resolved.yaml", tiny, ["config/archive.yaml", "my copy.yaml"])
    assert read_provenance(tmp_path / "results/config.resolved.yaml") == (tiny, ["config/archive.yaml", "my copy.yaml"])
    hint = other_data_hint(load_config([]), tmp_path / "missing.npz", tmp_path / "results/config.resolved.yaml", tmp_path)
    assert hint.endswith("add --configfile config/archive.yaml 'my copy.yaml'")
    assert other_data_hint(tiny, tmp_path / "missing.npz", tmp_path / "results/config.resolved.yaml", tmp_path) is None  # same data


def test_a_config_of_its_own_is_told_what_it_overwrites_never_to_layer_another_file(tmp_path):
    """After the default on an archive (config/archive.yaml config/jpeg-copy.yaml), the tiny first try
    (its own --configfile, `name: tiny`) is told that it files its tables and figures apart, an
    unnamed config that it writes them over theirs and how to keep them apart, neither to add their
    files to its own; where only n_train differs, the note says that."""
    from initmem.pipeline.invocation import other_data_hint, record_provenance

    record = tmp_path / "results/config.resolved.yaml"
    archive = load_config([ROOT / "config/archive.yaml", ROOT / "config/jpeg-copy.yaml"])
    record_provenance(record, archive, ["config/archive.yaml", "config/jpeg-copy.yaml"])
    shipped = load_config([ROOT / "config/tiny.yaml"])
    tiny = other_data_hint(shipped, tmp_path / "missing.npz", record, tmp_path, None, ["config/tiny.yaml"])
    assert "--configfile" not in tiny and "data.source synthetic (it makes synthetic images), not data.source archive" in tiny
    assert tiny.endswith("writes its tables and figures under results/tiny/ and figures/tiny/, apart from theirs")  # name: tiny
    unnamed = {k: v for k, v in shipped.items() if k != "name"}
    assert other_data_hint(unnamed, tmp_path / "missing.npz", record, tmp_path, None, ["mine.yaml"]).endswith(
        "writes its tables and figures over theirs in results/tables/ and figures/ (the runs of both are kept; "
        "to keep the tables and figures apart, give this config a `name:`, docs/outputs.md)")
    smaller = copy.deepcopy(archive)
    smaller["data"]["n_train"] = archive["data"]["n_train"] // 2
    note = other_data_hint(smaller, tmp_path / "missing.npz", record, tmp_path, None, ["small.yaml"])
    assert f"data.n_train {smaller['data']['n_train']}, not {archive['data']['n_train']}:" in note and "data.source" not in note
    smaller["name"] = "small"
    assert other_data_hint(smaller, tmp_path / "missing.npz", record, tmp_path, None, ["small.yaml"]).endswith(
        "writes its tables and figures under results/small/ and figures/small/, apart from theirs")


def test_a_profile_run_whose_profile_sets_its_config_is_never_told_to_add_a_config_file(tmp_path):
    from initmem.pipeline.invocation import other_data_hint, profile_configfiles, record_provenance

    set_by = profile_configfiles(["snakemake", "--profile", "slurm", "figures/fig6.pdf", "-n"], [ROOT])
    assert set_by[0].resolve() == ROOT / "slurm" and set_by[1] == ["config/paper.yaml"]
    assert profile_configfiles(["snakemake", "--profile", "slurm", "--configfile", "config/paper.yaml", "x.yaml"], [ROOT]) is None
    assert profile_configfiles(["snakemake", "-n"], [ROOT]) is None
    record_provenance(tmp_path / "results/config.resolved.yaml", load_config([ROOT / "config/tiny.yaml"]), ["config/tiny.yaml"])
    hint = other_data_hint(load_config([ROOT / "config/paper.yaml"]), tmp_path / "missing.npz",
                           tmp_path / "results/config.resolved.yaml", tmp_path, set_by)
    assert "data.source synthetic" in hint and "--configfile" not in hint and "config/paper.yaml" in hint


def test_an_oversized_batch_names_its_key_and_the_files_that_set_it_and_n_train(tmp_path):
    """batch_size 128 in a study's set, over n_train 64 from another file: both keys and both files named."""
    a = write(tmp_path / "data.yaml", "data:\n  n_train: 64\n")
    b = write(tmp_path / "study.yaml", "studies:\n  s:\n    set: {batch_size: 128}\n    grid: {sigma_w: [1.0], seed: [0]}\n")
    with pytest.raises(ConfigError) as err:
        load_config([a, b])
    message = str(err.value)
    assert message.startswith("studies.s.set.batch_size: 128 (in studies.s) exceeds data.n_train = 64")
    assert f"batch_size set in {b}" in message and f"n_train in {a}" in message


def test_make_runs_precheck_names_a_target_after_configfile_an_empty_file_and_a_binary_one(tmp_path):
    """`make run ARGS=...` checks the --configfile values first (Snakemake itself prints a traceback or a
    50-line UnicodeDecodeError): each mistake is one line naming the value and what to do."""
    from initmem.pipeline.configfiles import check_configfile_arg

    (tmp_path / "fig6.pdf").write_bytes(b"%PDF-1.5\n\xff\xfe\x00binary")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "blob.yaml").write_bytes(b"\xff\xfe\x00\x81")
    cases = {"figures/fig6.pdf": "given after --configfile", str(tmp_path / "fig6.pdf"): "given after --configfile",
             "runs": "put targets before --configfile", str(tmp_path / "empty.yaml"): "an empty config file",
             str(tmp_path / "blob.yaml"): "not a text file"}
    for value, says in cases.items():
        with pytest.raises(ConfigError, match=re.escape(says)) as err:
            check_configfile_arg(value)
        assert "\n" not in str(err.value) and value in str(err.value)
    check_configfile_arg(ROOT / "config" / "archive.yaml")  # a config file passes


def test_a_first_offline_run_with_the_archive_in_data_is_told_which_config_reads_it(tmp_path):
    """`make run` downloads through torchvision by default; with data/cifar-10-python.tar.gz there, its
    pre-check says first which --configfile files read the archive (not the 413th line of a traceback)."""
    from initmem.cli import offline_hint

    default = load_config([])
    assert offline_hint(default, tmp_path) is None  # no archive: nothing to say
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"x")
    hint = offline_hint(default, tmp_path)
    assert hint.startswith("NOTE: ") and "\n" not in hint
    assert 'ARGS="--configfile config/archive.yaml"' in hint and "config/jpeg-copy.yaml" in hint
    assert offline_hint(load_config([ROOT / "config" / "archive.yaml"]), tmp_path) is None  # it already reads the archive


def test_the_placeholder_account_warns_a_command_that_submits_nothing_and_stops_one_that_submits(tmp_path, capsys):
    """`snakemake -n --profile slurm` (the README's "any machine" dry run) goes on with one warning line
    naming the file and key to change; a run that would submit jobs refuses in one line before any."""
    from initmem.pipeline.guards import InvocationError
    from initmem.pipeline.invocation import prepare_invocation

    shutil.copytree(ROOT / "slurm", tmp_path / "slurm")
    shipped = subprocess.run(["git", "-C", str(ROOT), "show", "HEAD:slurm/config.yaml"], capture_output=True, text=True)
    if shipped.returncode == 0:  # the committed profile, not a user's edited one
        (tmp_path / "slurm/config.yaml").write_text(shipped.stdout)
    argv = ["snakemake", "--profile", "slurm", "figures/fig6.pdf"]
    train = ['slurm_partition="gpu"', 'slurm_account="CHANGE_ME"', "partition_time_limit=1440"]
    config = {"data": {"source": "synthetic", "n_train": 64, "n_val": 32, "n_test": 32}}

    def prepare(argv, submits_nothing, resources=train):
        return prepare_invocation(argv, [tmp_path], resources, config, lambda: tmp_path / "results/data/x/cifar10.npz",
                                  lambda ident, code: "x", tmp_path / "results/config.resolved.yaml", root=tmp_path,
                                  submits_nothing=submits_nothing)

    notes = prepare(argv + ["-n"], submits_nothing=True).notes
    warnings = [line for line in notes if "CHANGE_ME" in line]
    assert len(warnings) == 1 and "\n" not in warnings[0] and warnings[0].startswith("WARNING: slurm_account is the placeholder")
    assert "slurm/config.yaml" in warnings[0] and "goes on" in warnings[0] and "stops here" in warnings[0]
    assert warnings[0] in capsys.readouterr().err
    with pytest.raises(InvocationError) as err:
        prepare(argv, submits_nothing=False)
    assert "\n" not in str(err.value) and "slurm_account is the placeholder CHANGE_ME: set your account in slurm/config.yaml" in str(err.value)
    # a real account, or --slurm-no-account: neither a warning nor a refusal
    assert not any("CHANGE_ME" in line for line in prepare(argv, False, [r.replace("CHANGE_ME", "lab42") for r in train]).notes)
    assert not any("CHANGE_ME" in line for line in prepare(argv + ["--slurm-no-account"], False).notes)
