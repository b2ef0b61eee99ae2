"""A user's new optimizer is one file and nothing else: it gets a label, a line style, a colour and a
rate family of its own, read from its file where it says them and derived where it does not. That a
copy of SGD's file under a new name, used in a tiny study beside Adam, goes through every figure,
every table, the claims table and the GPU-hour estimate with no other edit is asserted by the one
end-to-end pipeline (tests/test_workflow.py::test_end_to_end_tiny_synthetic_dag_with_a_new_optimizer_file)."""

import shutil

import pytest

from initmem import presentation as look
from initmem.costs.facts import rate_family
from initmem.spec import entry_names, registry_folder


def test_a_new_file_is_labelled_styled_coloured_and_costed_from_its_own_constants(tmp_path, monkeypatch):
    """Without constants a new file is shown by its name in a colour and marker no other optimizer has,
    and costed as its clock says; with LABEL, STYLE, COLOR and RATE_FAMILY it is shown and costed so."""
    folder = tmp_path / "optimizers"
    shutil.copytree(registry_folder("optimizer"), folder)
    shutil.copy(folder / "sgd.py", folder / "sgd_copy.py")
    (folder / "lamb.py").write_text('"""LAMB."""\n\nCLOCK = "T_adapt"\nSLOTS = {}\nLABEL = "LAMB"\n'
                                    'STYLE = {"ls": "--", "marker": "*"}\nCOLOR = "#000000"\nRATE_FAMILY = "muon"\n')
    import initmem.spec as spec

    real = spec.registry_folder
    monkeypatch.setattr(spec, "registry_folder", lambda kind: folder if kind == "optimizer" else real(kind))
    order = look.optimizer_order()
    assert set(order) == set(entry_names("optimizer")) and order[:3] == ["sgd", "sgd_momentum", "adam"]
    assert (look.label("sgd_copy"), look.table_label("sgd_copy"), rate_family("sgd_copy")) == ("sgd_copy", "sgd_copy", "sgd")
    assert look.color("sgd_copy") not in {look.color(o) for o in order if o != "sgd_copy"}
    assert look.style("sgd_copy") not in [look.style(o) for o in order if o != "sgd_copy"]
    assert (look.label("lamb"), look.style("lamb"), look.color("lamb"), rate_family("lamb")) == (
        "LAMB", {"ls": "--", "marker": "*"}, "#000000", "muon")


def test_the_papers_optimizers_keep_their_look():
    """The figures' labels, styles and colours of the paper's optimizers (matplotlib's tab10 in the paper's order)."""
    assert [look.label(o) for o in look.optimizer_order()[:7]] == ["SGD", "SGD+mom.", "Adam", "AdamW", "Muon", "Muon (full)", "Lion"]
    assert look.style("adamw") == {"ls": "--", "marker": "v", "mfc": "none"} and look.color("sgd") == "#1f77b4"
    assert look.table_label("sgd_momentum") == "SGD-momentum"
    assert [rate_family(o) for o in ("sgd", "sgd_momentum", "adam", "adamw", "muon", "muon_full", "lion")] == [
        "sgd", "sgd", "adam", "adam", "muon", "muon", "adam"]


def test_a_new_architecture_files_cost_numbers_come_from_it_or_an_error_names_them(monkeypatch, tmp_path):
    """The memory and rate models read a new architecture's numbers from its file; one it lacks is an
    error naming the file and the constant, not a KeyError."""
    import initmem.spec as spec
    from initmem.costs.rates import default_curve
    from initmem.pipeline.targets import pack_state_mb

    folder = tmp_path / "architectures"
    shutil.copytree(registry_folder("arch"), folder)
    (folder / "tiny_net.py").write_text('"""A test network."""\n\nPARAMS_AT_WIDTH_64 = 1048576\n')
    real = spec.registry_folder
    monkeypatch.setattr(spec, "registry_folder", lambda kind: folder if kind == "arch" else real(kind))
    state = pack_state_mb([{"arch": "tiny_net", "width": 64, "optimizer": "sgd"}])
    assert state == 4.0  # 2**20 float32 parameters, no slots
    with pytest.raises(ValueError, match=r"engine/architectures/tiny_net.py: give OPS_PER_STEP"):
        default_curve("tiny_net", 64, 16, "sgd", "float32")
