"""The SLURM profile: dry runs anywhere, and against a real single-node Slurm that the test installs
and starts, only when asked (INITMEM_TEST_SLURM=1, as .ci/run does): it changes the machine."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import slurm_cluster
import yaml
from conftest import tiny_config

# each test starts Snakemake at paper scale: the full suite's, not the edit-test loop's
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def shipped_slurm_profile(work: Path) -> Path:
    """The Slurm profile as the repository ships it, copied to ``work/slurm``: the committed
    ``slurm/config.yaml`` (``git show HEAD:``), never the user's edited one (the README's Slurm step
    sets a real account, which the placeholder tests must not see)."""
    shutil.copytree(ROOT / "slurm", work / "slurm")
    shipped = subprocess.run(["git", "-C", str(ROOT), "show", "HEAD:slurm/config.yaml"], capture_output=True, text=True)
    if shipped.returncode == 0:  # a checkout without git history has only the working copy
        (work / "slurm/config.yaml").write_text(shipped.stdout)
    return work / "slurm"


def without_account(profile: Path) -> Path:
    """The profile as a cluster without accounts has it (docs/slurm.md, step 2): the account line (and
    its comment's second line) deleted, ``slurm-no-account: true`` added. The plugin submits any
    ``slurm_account`` a job carries, whatever ``--slurm-no-account`` says."""
    import re

    config = profile / "config.yaml"
    text = re.sub(r"^    slurm_account: .*\n(?:\s+# .*\n)?", "", config.read_text(), count=1, flags=re.M)
    config.write_text(text + "slurm-no-account: true\n")
    return profile


SLURM_TINY = tiny_config({"main": {"grid": {"optimizer": ["sgd", "adam"], "batch_size": [32], "sigma_w": [0.5, 2.0], "seed": [0]}}},
                         checkpoint_every=1)


@pytest.mark.workflow
def test_profile_dry_run_without_slurm(tmp_path):
    from conftest import job_counts, workdir_copy

    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.invocation import record_provenance

    work = workdir_copy(tmp_path)
    shipped_slurm_profile(work)
    # a checkout whose results another config made (other data): the note must not send the profile run elsewhere
    record_provenance(work / "results/config.resolved.yaml", load_config([ROOT / "config/tiny.yaml"]), ["config/tiny.yaml"])
    # the README's command as printed, on the shipped profile (placeholder account): it goes on, warning once
    proc = subprocess.run([sys.executable, "-m", "snakemake", "figures/fig6.pdf", "--profile", "slurm", "-n", "--quiet", "rules"],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if "CHANGE_ME" in line]
    assert len(warnings) == 1 and warnings[0].startswith("WARNING: slurm_account is the placeholder CHANGE_ME: set your account in "
                                                         "slurm/config.yaml"), proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    # main + lr_l2 at paper scale in packs: the profile selects config/paper.yaml
    assert counts["run_metrics"] == 6250 + 120
    from initmem.pipeline.estimate import planned_estimate, profile_jobs
    from initmem.pipeline.grid import expand_studies
    from initmem.pipeline.planning import make_packs

    runs = expand_studies(yaml.safe_load((ROOT / "config/paper.yaml").read_text()))
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    pack = config["pack"]
    by_study = {s: list(make_packs(runs[s], pack["max_models"], pack["max_images"], config["compute"]).values()) for s in runs}
    packs = by_study["main"] + by_study["lr_l2"]
    assert counts["train"] == len(packs)
    # it ends with what the training costs: GPU-hours and checkpoint disk, as `python -m initmem estimate` computes them,
    # and, since Figure 6 is a part of the config, the whole config's GPU-hours (estimate's `all` row)
    estimate = planned_estimate([[r.spec for r in p] for p in packs], config["compute"], profile_jobs(work / "slurm/config.yaml"),
                                ["main", "lr_l2"], [[r.spec for r in p] for ps in by_study.values() for p in ps])
    assert "6,370 runs of studies lr_l2, main" in estimate and "a part of the config, whose 8,200 runs in 445 jobs" in estimate
    assert proc.stderr.rstrip().endswith(estimate) and "GPU-hours" in estimate and "checkpoint disk with 200" in estimate
    notes = [line for line in proc.stderr.splitlines() if line.startswith("NOTE")]
    assert any("data.source synthetic" in line for line in notes) and not any("--configfile" in line for line in notes)


@pytest.mark.workflow
def test_profile_refuses_the_placeholder_account_before_submitting(tmp_path):
    """A run (no -n) with the shipped profile's placeholder account stops when the workflow is parsed, in one
    line naming the file and key, before any job is planned or submitted (no Slurm here: a submission would fail
    differently)."""
    from conftest import workdir_copy

    work = workdir_copy(tmp_path)
    shipped_slurm_profile(work)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "figures/fig6.pdf", "--profile", "slurm"],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "slurm_account is the placeholder CHANGE_ME: set your account in slurm/config.yaml" in proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr and "sbatch" not in proc.stdout + proc.stderr and not (work / "results/plans").exists()


@pytest.mark.workflow
def test_profile_refuses_a_silently_overriding_workflow_profile(tmp_path):
    from conftest import workdir_copy

    work = workdir_copy(tmp_path)
    shipped_slurm_profile(work)
    # the project's own workflow profile sets no resources; one that does would win over --profile's
    (work / "profiles/default/config.yaml").write_text("force-use-threads: true\ndefault-resources:\n  slurm_partition: wrong\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "figures/fig8.pdf", "--profile", "slurm", "-n"],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode != 0 and "would override the resources" in proc.stdout + proc.stderr


def _job_resources(dry_run: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, {resource: value}) of each job a dry run lists, as Snakemake prints them."""
    import re

    jobs = re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    resources: (.*)$", dry_run, re.M)
    return [(rule, dict(item.partition("=")[::2] for item in line.split(", "))) for rule, line in jobs]


def _localrules() -> set[str]:
    """Every rule the workflow declares local (the localrules: blocks of workflow/rules/*.smk)."""
    import re

    text = "".join(p.read_text() for p in (ROOT / "workflow/rules").glob("*.smk"))
    return {name for block in re.findall(r"^localrules:\n((?:[ \t]+\w+,\n)+)", text, re.M) for name in re.findall(r"\w+", block)}


@pytest.mark.workflow
def test_only_the_submitted_rule_carries_slurm_resources(tmp_path):
    """A dry run under the profile: no local rule (data, plans, run files, tables, figures) shows a
    Slurm key among its resources, so none reads as submitted; ``train`` still asks for the profile's
    partition, account, time limit, GPU and signal."""
    from conftest import workdir_copy

    work = workdir_copy(tmp_path)
    shipped_slurm_profile(work)
    (work / "tiny.yaml").write_text(yaml.safe_dump(SLURM_TINY, sort_keys=False))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--profile", "slurm", "--configfile", "tiny.yaml", "-n",
                           "--slurm-no-account"], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _job_resources(proc.stdout)
    local = {rule for rule, _ in jobs} - {"train"}
    assert local >= {"prepare_data", "plan_pack", "run_metrics", "collect_study", "tables", "figure", "linear_check", "clocks_table"}
    assert local <= _localrules() | {"all"}  # `all` only gathers the targets
    for rule, resources in jobs:
        cluster_keys = {k: v for k, v in resources.items() if k.startswith("slurm_") or k == "partition_time_limit"}
        if rule == "train":
            assert cluster_keys == {"slurm_partition": "gpu", "slurm_account": "CHANGE_ME", "partition_time_limit": "1440",
                                    "slurm_extra": "--signal=TERM@300"} and resources["gpu"] == "1"
        else:
            assert not cluster_keys, f"local rule {rule} shows {cluster_keys}"


OPT_IN = "INITMEM_TEST_SLURM"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.environ.get(OPT_IN) != "1":
        pytest.skip(f"the real-Slurm test apt-installs Slurm and starts its daemons as root; set {OPT_IN}=1 to run it")
    info = slurm_cluster.start(tmp_path_factory.mktemp("slurm-state"))  # asked for: a failure to start fails
    try:
        yield info
    finally:
        info.stop()


def test_cluster_never_overwrites_a_slurm_config_it_did_not_write(tmp_path):
    site = tmp_path / "slurm.conf"
    site.write_text("ClusterName=site\n")
    with pytest.raises(slurm_cluster.SlurmUnavailable, match="not written by this test"):
        slurm_cluster.write_owned(site, "ClusterName=initmem-test\n")
    assert site.read_text() == "ClusterName=site\n" and slurm_cluster.foreign_config(tmp_path) == [site]
    ours = tmp_path / "gres.conf"
    slurm_cluster.write_owned(ours, "a\n")
    slurm_cluster.write_owned(ours, "b\n")  # its own file: rewritten
    assert ours.read_text().splitlines() == [slurm_cluster.MARK, "b"] and slurm_cluster.foreign_config(tmp_path) == [site]


@pytest.mark.slurm
def test_profile_runs_training_on_slurm_gpus(cluster, tmp_path):
    from conftest import workdir_copy

    work = workdir_copy(tmp_path)
    without_account(shipped_slurm_profile(work))
    (work / "tiny.yaml").write_text(yaml.safe_dump(SLURM_TINY, sort_keys=False))
    # The same profile (partition gpu, as this test cluster's); overridden only where this 2-core,
    # accounting-free test cluster needs it.
    cmd = [sys.executable, "-m", "snakemake", "figures", "--profile", "slurm", "--configfile", "tiny.yaml",
           "--default-resources", "runtime=10", "mem_mb=1000",
           "--set-threads", "train=1", "--jobs", "4", "--latency-wait", "10",
           "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    train_jobs = [j for j in slurm_cluster.job_records() if "rule_train" in j.get("Comment", "")]
    assert len(train_jobs) == 4  # one sbatch job per run of the tiny config
    for job in train_jobs:
        assert job["JobState"] == "COMPLETED"
        assert job.get("TresPerJob") == "gres:gpu:1"  # sbatch --gpus=1, from the profile's `gpu: 1`
        assert job["Partition"] == "gpu"
    for fig in ("fig1", "fig2", "fig3", "fig6"):
        assert (work / f"figures/{fig}.pdf").stat().st_size > 1000
    runs = SLURM_TINY
    assert len(list((work / "results/runs/main").glob("*.json"))) == 4 == 2 * 2 * len(runs["studies"]["main"]["grid"]["seed"])


# One run long enough to be stopped in the middle (300 short epochs); its runtime request comes out
# at 8 minutes (3 from the rate, 1.5x margin, + 5), so the profile's own signal comes 3 minutes in.
SLURM_LONG = tiny_config({"main": {"grid": {"sigma_w": [1.0], "seed": [0]}}}, epochs=300)
SLURM_LONG["compute"].update(images_per_second=250, attempts=3)  # attempts as in paper.yaml: 2 continuations


@pytest.mark.slurm
def test_a_job_stopped_at_its_time_limit_requeues_itself_and_uses_no_retry(cluster, tmp_path):
    """SIGTERM to the training step with minutes left before its limit (what --signal=TERM@300
    sends; here `scancel --signal=TERM` once the first epoch is logged): the job saves its
    checkpoint, requeues itself, runs again under the same job id and finishes, with Snakemake
    allowed no retry at all."""
    import time

    from conftest import workdir_copy

    work = workdir_copy(tmp_path)
    without_account(shipped_slurm_profile(work))
    (work / "long.yaml").write_text(yaml.safe_dump(SLURM_LONG, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "runs", "--profile", "slurm", "--configfile", "long.yaml",
           "--default-resources", "runtime=10", "mem_mb=1000", "--retries", "0",
           "--set-threads", "train=1", "--jobs", "1", "--latency-wait", "10",
           "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    logs = work / "results/logs/train/main"

    def first_epoch_logged() -> bool:
        return logs.is_dir() and any("epoch 1/" in p.read_text() for p in logs.glob("*.log"))
    while not first_epoch_logged():
        assert proc.poll() is None, proc.stdout.read()[-4000:]
        time.sleep(0.5)  # polling for the event (the first epoch in the job's log)
    # this test's train job: the running one (slurmctld still remembers the finished jobs of earlier tests)
    job = next(j for j in slurm_cluster.job_records() if "rule_train" in j.get("Comment", "") and j.get("JobState") == "RUNNING")
    subprocess.run(["scancel", "--signal=TERM", job["JobId"]], check=True)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-4000:]
    log = next(logs.glob("*.log")).read_text()
    assert f"time limit: Slurm job {job['JobId']} requeued, continuation 1 of 2 (no Snakemake retry used)" in log, log[-3000:]
    assert "resumed at epoch" in log
    final = next(j for j in slurm_cluster.job_records() if j["JobId"] == job["JobId"])
    assert final["JobState"] == "COMPLETED" and int(final["Restarts"]) >= 1
    record = json.loads(next((work / "results/runs/main").glob("*.json")).read_text())
    assert len(record["history"]["epoch"]) == 300


@pytest.mark.parametrize("limit, minutes", [(1440, 1440), ("1-00:00:00", 1440), ("'4:00:00'", 240), ("90", 90),
                                            ("90:59", 90), ("2-12", 3600), ("infinite", None), ("UNLIMITED", None)])
def test_the_partition_time_limit_reads_as_sinfo_prints_it(limit, minutes):
    from initmem.costs.timelimit import partition_time_limit

    assert partition_time_limit(["slurm_partition=gpu", f"partition_time_limit={limit}"]) == minutes


def test_estimate_reads_the_time_limit_where_the_profile_states_it_for_train():
    """``estimate`` and ``design`` read a profile file, not Snakemake: train's set-resources (a mapping
    or ``rule:name=value`` strings) win over default-resources, and another rule's limit is not train's."""
    from initmem.costs.timelimit import profile_time_limit

    assert profile_time_limit({"set-resources": {"train": {"partition_time_limit": "4:00:00"}},
                               "default-resources": {"partition_time_limit": 1440}}) == 240
    assert profile_time_limit({"set-resources": ["train:partition_time_limit=90", "figure:partition_time_limit=5"]}) == 90
    assert profile_time_limit({"set-resources": {"figure": {"partition_time_limit": 5}}, "default-resources": ["partition_time_limit=60"]}) == 60
    assert profile_time_limit(yaml.safe_load((ROOT / "slurm/config.yaml").read_text())) == 1440


def test_the_partition_time_limit_lowers_the_configs_cap_and_never_raises_it():
    from initmem.costs.timelimit import capped_compute

    assert capped_compute({"max_runtime_minutes": 1440}, 240)["max_runtime_minutes"] == 240
    assert capped_compute({"max_runtime_minutes": 60}, 240)["max_runtime_minutes"] == 60
    assert capped_compute({"max_runtime_minutes": None}, 240)["max_runtime_minutes"] == 240
    assert capped_compute({"max_runtime_minutes": 1440}, None)["max_runtime_minutes"] == 1440


def _train_requests(work: Path, limit_line: str) -> list[tuple[int, int]]:
    """The (runtime minutes, mem_mb) each train job of a dry run asks for, with the profile's time-limit line replaced."""
    import re

    profile = work / "slurm/config.yaml"
    profile.write_text(re.sub(r"^    partition_time_limit: .*$", limit_line, profile.read_text(), flags=re.M))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "runs", "--profile", "slurm", "--configfile", "c.yaml", "-n",
                           "--slurm-no-account"], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    blocks = proc.stdout.split("\nrule ")
    return [(int(re.search(r"runtime=(\d+)", b)[1]), int(re.search(r"mem_mb=(\d+)", b)[1])) for b in blocks if b.startswith("train:")]


def _train_runtimes(work: Path, limit_line: str) -> list[int]:
    """The runtime (minutes) each train job of a dry run asks for, with the profile's time-limit line replaced."""
    return [runtime for runtime, _ in _train_requests(work, limit_line)]


@pytest.mark.workflow
def test_no_job_asks_for_more_than_the_profiles_partition_time_limit(tmp_path):
    """A pack the rate model says needs ~27 minutes, under a config cap of 1440: with the profile's
    partition limit at 15 minutes its job asks for 15 (it resumes across attempts), and for its own
    estimate where the profile states no limit."""
    from conftest import workdir_copy

    work = workdir_copy(tmp_path)
    assert "\n    partition_time_limit: 1440 " in (shipped_slurm_profile(work) / "config.yaml").read_text()  # the line a user edits
    cfg = tiny_config({"main": {"grid": {"optimizer": ["sgd"], "batch_size": [16], "sigma_w": [0.5], "seed": [0]}}})
    cfg["compute"].update(images_per_second=0.2, max_runtime_minutes=1440, attempts=3)
    (work / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert _train_runtimes(work, "    partition_time_limit: 15") == [15]
    assert _train_runtimes(work, "") == [27]


@pytest.mark.workflow
def test_a_compiled_train_job_asks_for_its_compile_minutes_and_workers_memory(tmp_path):
    """The same ~27-minute pack with compute.compile: step asks for 15 minutes more (3 x 5 graphs: the
    training batch, three evaluation shapes, the update) and 2,048 MiB more (initmem.costs.compilecost)."""
    from conftest import workdir_copy

    from initmem.costs.compilecost import COMPILE_WORKERS_MB

    work = workdir_copy(tmp_path)
    shipped_slurm_profile(work)
    cfg = tiny_config({"main": {"grid": {"optimizer": ["sgd"], "batch_size": [16], "sigma_w": [0.5], "seed": [0]}}})
    cfg["compute"].update(images_per_second=0.2, max_runtime_minutes=1440, attempts=3)
    (work / "c.yaml").write_text(yaml.safe_dump(cfg))
    [(runtime, mem)] = _train_requests(work, "")
    assert runtime == 27
    cfg["compute"]["compile"] = "step"
    (work / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert _train_requests(work, "") == [(runtime + 15, mem + COMPILE_WORKERS_MB)]


def test_the_cheapest_config_dry_runs_alone_under_the_profile_with_its_gpu_hours(tmp_path):
    """`design --write-config FILE` of the paper writes a config complete on its own: `--profile slurm --configfile
    FILE` (which replaces the profile's config/paper.yaml) plans exactly FILE's runs at paper scale, and the dry run's
    estimate is FILE's `all` row, the GPU-hours the design printed."""
    from conftest import job_counts, workdir_copy

    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.estimate import cluster_config, config_gpu_hours
    from initmem.planner import design as D

    work = workdir_copy(tmp_path)
    shipped_slurm_profile(work)
    paper = load_config([ROOT / "config/paper.yaml"])
    sgd = next(p for p in D.planned(paper) if p.study == "main" and p.spec["optimizer"] == "sgd" and p.spec["batch_size"] == 16)
    plan = D.Plan("sgd_keeps_spread_b16", "spread", [sgd], None, None, "")
    (work / "cheap.yaml").write_text(yaml.safe_dump(D.written_config(paper, [plan], [(3, (0.1, 2.5), 0.9, 1.0)]), sort_keys=False))
    assert D.run_command(paper, "cheap.yaml") == ".venv/bin/snakemake --profile slurm --configfile cheap.yaml"
    proc = subprocess.run([sys.executable, "-m", "snakemake", "runs", "--profile", "slurm", "--configfile", "cheap.yaml", "-n",
                           "--quiet", "rules", "--slurm-no-account"], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert job_counts(proc.stdout)["run_metrics"] == 6  # 3 seeds x 2 sigma_w, not the paper's 8,200
    central = config_gpu_hours(cluster_config(load_config([work / "cheap.yaml"])))[1]
    assert f"{central:,.0f} central" in proc.stderr, proc.stderr[-2000:]
