"""Run keys are what they always were (a changed key retrains a finished run), and the code each run
uses is hashed once per file per process however many runs ask (the paper's dry run asks ~25,000
times), while an edited file is hashed again."""

from pathlib import Path

from initmem.pipeline import identity
from initmem.pipeline.identity import code_version, data_folder, data_identity, run_code_version, run_key

SPEC = {"arch": "resnet9", "width": 4, "norm": "batchnorm", "pool": "max", "optimizer": "sgd", "lr": 0.05, "schedule": "cosine",
        "alpha": 0.01, "epochs": 2, "batch_size": 32, "l2": 0.0, "weight_decay": 0.0, "momentum": 0.0, "augment": False,
        "patience": None, "sigma_w": 1.0, "seed": 0, "n_train": 96, "n_val": 48, "n_test": 48}
PAPER_DATA = {"source": "torchvision", "n_train": 40000, "n_val": 10000, "n_test": 10000}
MODULE = '"""Doc."""\nimport math\nfrom initmem.engine import clocks\n\n\ndef f(n, b):\n    # a comment\n    return math.ceil(n / b)\n'


def test_a_fixed_specs_key_and_data_folder_are_what_they_always_were(tmp_path):
    """Values computed by the code that keyed the finished runs (before any caching): a change here
    means every finished run retrains and every prepared split is made again."""
    data_id = data_identity(PAPER_DATA)
    assert data_id == {"origin": "cifar10-official", "n_train": 40000, "n_val": 10000, "n_test": 10000}
    assert run_key(SPEC, data_id, "0123456789abcdef", "float32") == "f32dd8a850159e2f"
    assert data_folder(data_id, "fedcba9876543210") == "cifar10-40000-10000-10000-9b291684d2"
    (tmp_path / "a.py").write_text(MODULE)
    (tmp_path / "b.py").write_text("X = 1\n")
    assert code_version(["a.py", "b.py"], base=tmp_path) == "7f7845af1c53875c"


def test_an_edited_file_is_hashed_again_in_the_same_process(tmp_path):
    (tmp_path / "a.py").write_text(MODULE)
    before = code_version(["a.py"], base=tmp_path)
    (tmp_path / "a.py").write_text(MODULE.replace("math.ceil", "math.floor"))
    edited = code_version(["a.py"], base=tmp_path)
    assert edited != before
    (tmp_path / "a.py").write_text(MODULE.replace("# a comment", "# another comment, longer"))
    assert code_version(["a.py"], base=tmp_path) == before  # comments still do not count
    (tmp_path / "a.py").unlink()
    assert code_version(["a.py"], base=tmp_path) == code_version([], base=tmp_path)  # an absent file is skipped


def test_every_paper_run_key_parses_each_code_file_once(monkeypatch):
    """8,200 keys (twice over) from one parse of each file they use, and the same keys as a fresh process."""
    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.grid import expand_studies

    root = Path(__file__).resolve().parents[1]
    config = load_config([str(root / "config/paper.yaml")], {}, default=root / "config/config.yaml", schema=root / "config/schema.yaml")
    runs = [r for study in expand_studies(config).values() for r in study]
    data_id, source = data_identity(config["data"]), config["data"]["source"]
    _forget()  # as a new process finds it
    parsed = []
    strip = identity._strip_docstrings
    monkeypatch.setattr(identity, "_strip_docstrings", lambda tree: parsed.append(tree) or strip(tree))
    keys = [[run_key(r.spec, data_id, run_code_version(r.spec, source), "float32") for r in runs] for _ in range(2)]
    files = set(identity.TRAINER_MODULES) | set(identity.source_files(source)) \
        | {f for r in runs for kind in ("optimizer", "arch") for f in identity.entry_files(kind, r.spec[kind])}
    assert len(runs) == 8200 and keys[0] == keys[1]
    assert len(parsed) == len(files)
    _forget()
    assert [run_key(r.spec, data_id, run_code_version(r.spec, source), "float32") for r in runs[::97]] == keys[0][::97]


def _forget() -> None:
    """Drop every code version this process has computed."""
    identity._VERSIONS.clear()
    identity._TREES.clear()
    for cached in (identity.trainer_version, identity._entry_version):
        cached.cache_clear()


def test_the_engine_core_keys_runs_as_the_finished_runs_were_keyed(monkeypatch):
    """Every finished run's key holds the core's version: an edit that changes it retrains them all.
    If the edit changes numbers, put its new version here; if it provably does not, list it in
    identity.SAME_NUMBERS_AS with the version it computes the numbers of (docs/reruns.md)."""
    assert identity.trainer_version() == "a6a2e72afa3b8440"
    # the listed equivalence is what keeps it: the core's own syntax trees give another version
    monkeypatch.setattr(identity, "SAME_NUMBERS_AS", {})
    identity.trainer_version.cache_clear()
    try:
        assert identity.trainer_version() == "9b70a81224d002c3"
    finally:
        identity.trainer_version.cache_clear()


def test_an_equivalence_holds_for_the_exact_code_it_names(tmp_path):
    """An edit of a core listed in SAME_NUMBERS_AS gives a version of its own: the runs retrain."""
    import shutil

    base = tmp_path / "initmem"
    for name in identity.TRAINER_MODULES:
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(identity.LIBRARY / name, base / name)
    assert code_version(identity.TRAINER_MODULES, base=base) in identity.SAME_NUMBERS_AS
    loop = base / "engine/loop.py"
    loop.write_text(loop.read_text() + "\nEDITED = True\n")
    assert code_version(identity.TRAINER_MODULES, base=base) not in identity.SAME_NUMBERS_AS


def test_a_grid_appended_to_the_papers_main_keeps_every_runs_id_and_key():
    """A new optimizer at its own lr, appended as a second grid of the 6,250-run main study: every
    run that was there keeps its id, configuration (its pack) and key, so none retrains."""
    import copy

    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.grid import expand_studies

    root = Path(__file__).resolve().parents[1]
    config = load_config([str(root / "config/paper.yaml")], {}, default=root / "config/config.yaml", schema=root / "config/schema.yaml")
    extended = copy.deepcopy(config)
    main = extended["studies"]["main"]
    added = {"optimizer": ["sgd_momentum"], "lr": [0.1], **{k: v for k, v in main["grid"].items() if k != "optimizer"}}
    main["grid"] = [main["grid"], added]
    data_id = data_identity(config["data"])

    def keyed(cfg):
        source = cfg["data"]["source"]
        return {r.run_id: (r.config_id, run_key(r.spec, data_id, run_code_version(r.spec, source), "float32"))
                for r in expand_studies(cfg)["main"]}

    before, after = keyed(config), keyed(extended)
    assert len(before) == 6250 and len(after) == 6250 + 1250
    assert {run_id: after[run_id] for run_id in before} == before
    assert all(run_id.startswith("sgd-momentum_lr0.1_b") for run_id in set(after) - set(before))
