"""A full disk, a read-only results folder, a study that cannot be analysed: each is one line naming
the file or folder and the cause, and a failed invocation leaves the earlier config's provenance
and tables as they were."""

from __future__ import annotations

import copy
import errno
import os

import pytest
import yaml
from conftest import snakemake, tiny_config, workdir_copy

from initmem.io import atomic_path

NO_SPACE = "No space left on device (errno ENOSPC); free space on its file system, then run the same command again"


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_while_preparing_data_is_one_line_naming_the_file(tmp_path, capsys, monkeypatch):
    from initmem import cli

    monkeypatch.setattr("numpy.savez", _full_disk)
    out = tmp_path / "data" / "cifar10.npz"
    args = ["prepare", "--source", "synthetic", "--n-train", "64", "--n-val", "32", "--n-test", "32", str(out)]
    with pytest.raises(SystemExit) as stop:  # as the workflow's job runs it: with its log
        cli.main([*args, "--log", str(tmp_path / "prepare.log")])
    err = capsys.readouterr().err
    assert stop.value.code == 1 and err.strip() == f"ERROR: cannot write {out}: {NO_SPACE}"
    assert (tmp_path / "prepare.log").read_text().strip().endswith(f"ERROR: cannot write {out}: {NO_SPACE}")
    assert not out.exists() and list(out.parent.iterdir()) == []  # no half-written file, no temporary left
    with pytest.raises(SystemExit) as stop:  # by hand, without a log
        cli.main(args)
    assert stop.value.code == 2 and capsys.readouterr().err == f"initmem prepare: error: cannot write {out}: {NO_SPACE}\n"


def test_a_full_disk_in_an_analysis_job_is_one_line_and_keeps_the_old_file(tmp_path, capsys):
    from initmem.scriptjobs import log_to

    table = tmp_path / "tables" / "runs.csv"
    table.parent.mkdir()
    table.write_text("old\n")
    with pytest.raises(SystemExit) as stop, log_to(tmp_path / "job.log"):
        with atomic_path(table) as tmp:
            tmp.write_text("new, half")
            _full_disk()
    assert stop.value.code == 1 and capsys.readouterr().err.strip() == f"ERROR: cannot write {table}: {NO_SPACE}"
    assert table.read_text() == "old\n" and sorted(p.name for p in table.parent.iterdir()) == ["runs.csv"]


def test_other_errors_inside_a_write_are_not_called_write_errors(tmp_path):
    with pytest.raises(FileNotFoundError), atomic_path(tmp_path / "x.csv"):
        open(tmp_path / "missing-input.csv").read()


def test_a_read_only_results_folder_is_one_line_with_its_cause(tmp_path, monkeypatch):
    from initmem.pipeline.guards import read_only_folder

    (tmp_path / "results").mkdir()
    (tmp_path / "figures").mkdir()
    assert read_only_folder([tmp_path / "results", tmp_path / "figures", tmp_path / "absent"]) is None
    monkeypatch.setattr(os, "access", lambda path, mode: not str(path).endswith("results"))
    line = read_only_folder([tmp_path / "results", tmp_path / "figures"])
    assert line.startswith(f"{tmp_path / 'results'}/ is read-only (") and "\n" not in line
    assert "no write permission for this user" in line or "mounted read-only" in line


@pytest.mark.slow  # over 8 s (docs/measured-numbers.md: make test-fast)
@pytest.mark.workflow
def test_a_single_sigma_w_is_refused_where_spreads_are_computed_not_for_its_runs(tmp_path):
    work = workdir_copy(tmp_path)
    one = tiny_config({"main": {"grid": {"optimizer": ["sgd", "adam"], "sigma_w": [1.0], "seed": [0, 1]}}})
    (work / "c.yaml").write_text(yaml.safe_dump(one, sort_keys=False))
    proc = snakemake("-n", "--configfile", "c.yaml", cwd=work, check=False)
    assert proc.returncode != 0
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if "has one sigma_w" in line]
    assert lines == ["invalid config: studies.main: configuration sgd has one sigma_w (1.0); its spread and |beta| compare runs "
                     "across sigma_w: list at least two values (or build only its runs: the target runs)"]
    assert snakemake("runs", "-n", "--configfile", "c.yaml", cwd=work).returncode == 0  # training alone is fine
    # a command that builds nothing passes the guard: a checkout whose Snakemake was killed can be unlocked
    unlock = snakemake("--unlock", "--configfile", "c.yaml", cwd=work, check=False)
    assert unlock.returncode == 0 and "has one sigma_w" not in unlock.stdout + unlock.stderr, unlock.stderr[-2000:]


def test_the_targets_that_compute_spreads_are_the_tables_and_the_studies_figures():
    from initmem.pipeline.targets import needs_analysis

    computes = [[], ["all"], ["tables"], ["figures"], ["figures/fig1.pdf"], ["results/tables/spreads.csv"],
                ["runs", "results/mine/tables/beta.csv"]]
    builds_no_spread = [["runs"], ["data"], ["results/tables/studies/main.runs.csv"], ["results/tables/clocks.csv"],
                        ["figures/fig9.pdf"], ["results/config.resolved.yaml"], ["results/runs/main/sgd_sw1_s0.json"]]
    assert all(needs_analysis(t, "results/tables", "figures") for t in computes[:-1])
    assert needs_analysis(computes[-1], "results/mine/tables", "figures/mine")
    assert not any(needs_analysis(t, "results/tables", "figures") for t in builds_no_spread)


@pytest.mark.slow
@pytest.mark.workflow
def test_a_config_whose_data_cannot_be_written_rewrites_no_provenance_or_table(tmp_path):
    """A first config's record and clock table, then a config whose prepare_data hits a full disk
    (its np.savez fails with ENOSPC), run with --keep-going (so every job that can run does): the
    record and clocks.csv keep the first config's bytes, and the failure is one line naming the data
    file, no traceback, said again at the end with the record's state."""
    work = workdir_copy(tmp_path)
    first = tiny_config({"main": {"grid": {"sigma_w": [0.5, 2.0], "seed": [0]}}}, epochs=1)
    (work / "a.yaml").write_text(yaml.safe_dump(first, sort_keys=False))
    snakemake("results/tables/clocks.csv", "results/config.resolved.yaml", "--cores", "1", "--configfile", "a.yaml", cwd=work)
    kept = {name: (work / name).read_bytes() for name in ("results/config.resolved.yaml", "results/tables/clocks.csv")}
    second = copy.deepcopy(first)
    second["defaults"]["lr"] = 0.05  # other clocks
    second["data"]["n_train"] = 48  # other data: prepared anew
    (work / "b.yaml").write_text(yaml.safe_dump(second, sort_keys=False))
    with open(work / "workflow/initmem/engine/data.py", "a") as fh:  # the disk is full when the data is written
        fh.write("\n\nimport errno as _errno\nimport os as _os\n\n\ndef _full(*args, **kwargs):\n"
                 "    raise OSError(_errno.ENOSPC, _os.strerror(_errno.ENOSPC))\n\n\nnp.savez = _full\n")
    proc = snakemake("--cores", "2", "--keep-going", "--configfile", "b.yaml", cwd=work, check=False)
    assert proc.returncode != 0
    assert {name: (work / name).read_bytes() for name in kept} == kept
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    said = [line for line in text.splitlines() if line.startswith(("ERROR: cannot write", "NOTE: results/config.resolved.yaml"))]
    assert said[-2:] == [said[0], "NOTE: results/config.resolved.yaml still records the earlier config: no table or figure of "
                                  "this config was written"]  # the job's line, and once more at the end with the record's state
    assert said[0].startswith("ERROR: cannot write results/data/") and said[0].endswith(f"/cifar10.npz: {NO_SPACE}")


def test_ctrl_c_in_an_analysis_job_is_one_line_without_a_traceback(tmp_path, capsys):
    from initmem.scriptjobs import log_to

    with pytest.raises(SystemExit) as stop, log_to(tmp_path / "figure.log"):
        raise KeyboardInterrupt
    err = capsys.readouterr().err
    assert stop.value.code == 130 and err == "stopped by Ctrl-C before it finished, nothing half-written: run the same command to resume\n"
    assert (tmp_path / "figure.log").read_text() == err
