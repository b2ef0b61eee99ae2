"""Snakemake's incomplete markers of files finished before an interruption: released for the files
the project writes atomically (so they are neither remade nor, for a pack, retrained), kept for a
file that is missing (a job cut off) and for other outputs."""

import base64
import os

from initmem.pipeline.interrupted import INCOMPLETE, release_finished, released_note


def _mark(root, path: str, max_len: int = 255):
    """A marker as Snakemake's file backend writes it (a long name split into ``@`` folders)."""
    b64 = base64.urlsafe_b64encode(path.encode()).decode()
    chunks = [b64[i:i + max_len - 1] for i in range(0, len(b64), max_len - 1)]
    marker = root / INCOMPLETE / os.path.join(*["@" + c for c in chunks[:-1]], chunks[-1])
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text('{"external_jobid": null}')
    return marker


def test_only_markers_of_whole_atomic_outputs_are_released(tmp_path):
    made = {"results/packs/main/sgd_b16-1.json", "results/runs/main/" + "/".join(["r" * 100] * 3) + ".json", "results/tables/runs.csv"}
    for path in made:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    markers = {path: _mark(tmp_path, path) for path in [*made, "results/packs/main/cut-off.json"]}
    assert release_finished(tmp_path) == sorted(made - {"results/tables/runs.csv"})
    assert sorted(p for p, m in markers.items() if m.exists()) == ["results/packs/main/cut-off.json", "results/tables/runs.csv"]
    assert release_finished(tmp_path) == []  # nothing left to release; nothing else touched


def test_no_snakemake_folder_is_nothing_to_do(tmp_path):
    assert release_finished(tmp_path) == [] and released_note([]) is None
    assert "results/packs/a.json" in released_note(["results/packs/a.json"])
