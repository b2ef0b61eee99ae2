"""Every figure builds from a small synthetic set of metrics files, with the paper's panel layout."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_spec

from initmem.claims.analysis import collect
from initmem.engine.loop import summarize
from initmem.engine.metrics import METRICS_FORMAT
from initmem.figures.common import save_figure
from initmem.figures.registry import make_figure
from initmem.io import write_json
from initmem.pipeline.targets import FIGURES

EPOCHS = 4


def fake_record(study: str, run_id: str, spec: dict, rng: np.random.Generator) -> dict:
    """A metrics record with accuracies that fall with sigma_w (more for SGD), as the paper reports."""
    memory = 0.1 if spec["optimizer"] == "sgd" else 0.01
    epochs = list(range(1, EPOCHS + 1))
    val = [0.5 + 0.05 * e - memory * spec["sigma_w"] / e + rng.normal(0, 0.005) for e in epochs]
    train = [min(1.0, 0.6 + 0.12 * e) for e in epochs]
    lr = [spec["lr"]] * EPOCHS
    h = {"epoch": epochs, "train_loss": [1 / e for e in epochs], "train_acc": train, "val_loss": [2 - v for v in val],
         "val_acc": val, "test_loss": [2 - v for v in val], "test_acc": [v - 0.01 for v in val],
         "kernel_norm": [10 * spec["sigma_w"] + e for e in epochs], "lr": lr,
         "T_sgd": [e * 1e-4 for e in epochs], "T_l2": [e * spec["l2"] for e in epochs], "T_wd": [0.0] * EPOCHS,
         "T_adapt": [e * 0.1 for e in epochs]}
    return {"format": METRICS_FORMAT, "run_id": run_id, "spec": spec, "status": "ok", "history": h,
            "summary": summarize(h, 10 * spec["sigma_w"]), "env": {"device": "cpu"}, "wall_seconds": 1.0}


@pytest.fixture(autouse=True)
def _close_figures():
    """Each test's figures closed after it (pyplot keeps every open figure alive)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("metrics")
    grids = {
        "main": [dict(optimizer=o, batch_size=b) for o in ("sgd", "sgd_momentum", "adam", "adamw", "muon") for b in (16, 128)],
        "long": [dict(schedule="constant", epochs=5000, batch_size=b) for b in (16, 128)],
        "lr_l2": [dict(lr=lr, l2=l2, batch_size=b) for lr in (1e-3, 1e-2) for l2 in (0.0, 1e-2) for b in (16, 128)],
        "norm_aug": [dict(norm=n, optimizer=o, batch_size=b, augment=True) for n in ("batchnorm", "layernorm")
                     for o in ("sgd", "adam") for b in (16, 128)],
        "depth": [dict(arch=a, variant=v, optimizer=o, batch_size=b) for a, v in (("resnet56", "resnet56"), ("resnet110", "resnet110"),
                                                                                  ("resnet9", "r9avg"))
                  for o in ("sgd", "adam") for b in (16, 128)],
    }
    runs, history = [], []
    for study, configs in grids.items():
        files = []
        for i, cfg in enumerate(configs):
            for sw in (0.1, 1.0, 2.5):
                for seed in (0, 1):
                    spec = tiny_spec(sigma_w=sw, seed=seed, **cfg)
                    path = root / study / f"c{i}_sw{sw}_s{seed}.json"
                    write_json(path, fake_record(study, path.stem, spec, rng))
                    files.append(path)
        r, h = collect(files, study)
        runs.append(r)
        history.append(h)
    return pd.concat(runs, ignore_index=True), pd.concat(history, ignore_index=True)


# panels: the axes a figure shows (fig2 adds one colorbar axis)
# fig5/fig7: architectures x (metrics x both batch sizes); fig8: the main-grid baseline + BN/LN with augmentation
PANELS = {"fig1": 6, "fig2": 5 + 1, "fig3": 4, "fig4": 3, "fig5": 4 * 2, "fig6": 6, "fig7": 4 * 4, "fig8": 3 * 2}


@pytest.mark.parametrize("name", sorted(PANELS))
def test_figure_has_the_papers_panels(tables, tmp_path, name):
    runs, history = tables
    fig = make_figure(name, runs, history)
    assert len(fig.axes) == PANELS[name]
    drawn = [ax for ax in fig.axes if ax.lines or ax.images]
    assert len(drawn) >= PANELS[name] - 1  # every data panel has something on it
    fig.canvas.draw()  # final layout: panel positions
    column = lambda ax: round(ax.get_position().x0, 3)
    row = lambda ax: round(ax.get_position().y0, 3)
    for ax in fig.axes:
        if ax.lines:  # labelled itself, or on the outer panel of its column / row (shared axes)
            assert ax.get_xlabel() or any(a.get_xlabel() for a in fig.axes if column(a) == column(ax))
            assert ax.get_ylabel() or any(a.get_ylabel() for a in fig.axes if row(a) == row(ax))
    save_figure(fig, tmp_path / f"{name}.pdf", tmp_path / f"{name}.png")
    assert (tmp_path / f"{name}.pdf").stat().st_size > 5000 and (tmp_path / f"{name}.png").stat().st_size > 5000


def test_fig6_handles_all_zero_beta(tables, tmp_path):
    runs, history = tables
    flat = history.copy()
    flat["val_acc"] = flat["sigma_w"] * 0  # every run alike: |beta| is exactly 0, nothing for a log axis
    fig = make_figure("fig6", runs, flat)
    assert len(fig.axes) == 6 and not any(ax.lines for ax in fig.axes)
    save_figure(fig, tmp_path / "f.pdf", tmp_path / "f.png")  # renders (a log axis of zeros would raise)
    assert (tmp_path / "f.pdf").stat().st_size > 1000


def test_fig1_sgd_panel_shows_the_sigma_trend(tables):
    runs, history = tables
    fig = make_figure("fig1", runs, history)
    sgd_line = next(line for line in fig.axes[0].lines if line.get_label() == "SGD")
    y = sgd_line.get_ydata()
    assert y[0] > y[-1]  # test accuracy falls with sigma_w in the synthetic data


def _texts(fig) -> str:
    return "\n".join(t.get_text() for t in fig.texts + [t for ax in fig.axes for t in ax.texts]
                     + ([fig._supxlabel] if fig._supxlabel else []))


def test_fig3_says_no_run_interpolated_instead_of_a_blank_panel(tables):
    runs, history = tables
    never = runs.assign(tau_interp=np.nan, repair_gap=np.nan)
    fig = make_figure("fig3", never, history)
    assert "no run interpolated" in "".join(t.get_text() for t in fig.axes[0].texts)
    assert "no run interpolated" in "".join(t.get_text() for t in fig.axes[2].texts)
    # (d): no run has its checkpoint after an interpolation that never happened
    assert all(np.nanmax(line.get_ydata()) == 0 for line in fig.axes[3].lines)


def test_fig3_shows_the_share_of_checkpoints_after_interpolation(tables):
    runs, history = tables
    runs = runs.copy()
    main = runs["study"] == "main"
    runs.loc[main, "tau_interp"], runs.loc[main, "tau_best"] = 2.0, 4.0  # every selected checkpoint after interpolation
    runs.loc[main & (runs["optimizer"] == "sgd"), "tau_best"] = 1.0  # SGD's before
    fig = make_figure("fig3", runs, history)
    share = {line.get_label(): line.get_ydata() for line in fig.axes[3].lines}
    assert list(share["SGD"]) == [0, 0] and list(share["Adam"]) == [100, 100]


def test_fig4a_compares_the_long_run_on_matched_sigma_and_seed(tables):
    from initmem.claims.analysis import long_run_comparison

    runs, history = tables
    long_ = runs[(runs["study"] == "long") & (runs["seed"] == 0)]  # the paper's long run: one seed
    extra = long_[long_["sigma_w"] == 2.5].assign(sigma_w=3.0, test_acc_best=0.1, run_id="extra")  # no main partner
    runs = pd.concat([runs[runs["study"] != "long"], long_, extra], ignore_index=True)
    expected = long_run_comparison(runs).set_index("batch_size")
    fig = make_figure("fig4", runs, history)
    lines = {c.get_label(): c.lines[0] for c in fig.axes[0].containers}  # errorbar containers
    for b in (16, 128):
        y = lines[f"b={b}"].get_ydata()  # main (fewer epochs) first, then long
        assert y[0] == pytest.approx(expected.loc[b, "spread_main_matched"])
        assert y[1] == pytest.approx(expected.loc[b, "spread_long"])
        assert expected.loc[b, "seeds"] == "0" and expected.loc[b, "sigma_w"] == "0.1/1/2.5"
    assert "seed(s) 0" in _texts(fig)


def test_fig6_says_what_it_leaves_out_on_the_figure_and_in_the_log(tables, capsys):
    runs, history = tables
    h = history[~((history["study"] == "lr_l2") & (history["sigma_w"] != 0.1))]  # one sigma_w: no OLS fit
    fig = make_figure("fig6", runs, h)
    assert not any("SGD+L2" in line.get_label() for line in fig.axes[0].lines)
    note = "SGD+L2 b=16 ((a) SGD): not drawn, too few runs for an OLS fit"
    assert note in _texts(fig) and note in capsys.readouterr().err


def test_fig6_names_the_main_optimizers_its_panels_leave_out(tables, capsys):
    """Panels (a-d) are the paper's four optimizers: a new one in main (Lion here), and SGD-momentum,
    are named in the footnote and the log instead of vanishing without a word."""
    from initmem.figures.paper import LABELS

    runs, history = tables
    lion = history[(history["study"] == "main") & (history["optimizer"] == "sgd")].assign(optimizer="lion")
    fig = make_figure("fig6", runs, pd.concat([history, lion], ignore_index=True))
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert LABELS["lion"] not in titles and LABELS["sgd_momentum"] not in titles
    err = capsys.readouterr().err
    note = next(line for line in _texts(fig).splitlines() if "not drawn: the main study's" in line)
    for name in (LABELS["sgd_momentum"], LABELS["lion"]):
        assert name in note and name in err
    without = make_figure("fig6", runs, history[history["optimizer"] != "sgd_momentum"])
    assert "not drawn: the main study's" not in _texts(without)  # nothing left out, nothing said


def test_fig6_draws_the_ols_band(tables):
    runs, history = tables
    fig = make_figure("fig6", runs, history)
    assert len(fig.axes[0].collections) >= 2  # one confidence band per drawn curve


def test_fig8_has_the_no_augmentation_baseline_from_main(tables):
    runs, history = tables
    fig = make_figure("fig8", runs, history)
    assert "no aug. (main)" in fig.axes[0].get_title()
    sgd = next(line for line in fig.axes[0].lines if line.get_label() == "SGD")
    main = runs[(runs["study"] == "main") & (runs["optimizer"] == "sgd") & (runs["batch_size"] == 16)]
    assert sgd.get_ydata() == pytest.approx(100 * main.groupby("sigma_w")["test_acc_best"].mean().to_numpy())
    no_main = make_figure("fig8", runs[runs["study"] != "main"], history)
    assert "main grid not in this config" in "".join(t.get_text() for t in no_main.axes[0].texts)


def test_fig1_kernel_norm_panels_show_the_initial_norm(tables):
    runs, history = tables
    fig = make_figure("fig1", runs, history)
    ref = next(line for line in fig.axes[2].lines if "W_{init}" in line.get_label())
    main = runs[(runs["study"] == "main") & (runs["batch_size"] == 16)]
    assert ref.get_ydata() == pytest.approx(main.groupby("sigma_w")["kernel_norm_init"].mean().to_numpy())
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0.1", "1", "2.5"]  # ticks at the grid values


def test_fig2_cells_are_annotated_and_diverged_runs_marked(tables):
    runs, history = tables
    runs = runs.copy()
    hit = (runs["study"] == "main") & (runs["optimizer"] == "sgd") & (runs["batch_size"] == 16) & (runs["sigma_w"] == 2.5)
    runs.loc[hit & (runs["seed"] == 1), "status"] = "diverged"
    fig = make_figure("fig2", runs, history)
    cells = [t.get_text() for t in fig.axes[0].texts]
    assert len(cells) == 2 * 3 and sum(c.endswith("†") for c in cells) == 1
    assert "diverged" in _texts(fig)


def test_fig6_falls_back_to_the_configs_strongest_l2_and_says_so(tables):
    runs, history = tables
    h = history[~((history["study"] == "lr_l2") & np.isclose(history["lr"], 1e-2))]  # only eta=1e-3 left
    fig = make_figure("fig6", runs, h)
    assert any(line.get_label().startswith("SGD+L2") for line in fig.axes[0].lines)
    assert "SGD+L2 ablation at eta=0.001, L2=0.01 (the paper's eta=1e-2, L2=1e-2 is not in this config)" in _texts(fig)


def test_pdfs_embed_truetype_fonts_and_pngs_are_print_resolution(tables, tmp_path):
    from PIL import Image

    from initmem.figures.style import PNG_DPI

    runs, history = tables
    save_figure(make_figure("fig6", runs, history), tmp_path / "f.pdf", tmp_path / "f.png")  # mathtext labels too
    pdf = (tmp_path / "f.pdf").read_bytes()
    assert b"/Type3" not in pdf and b"/FontFile2" in pdf  # TrueType (Type 42) fonts, not Type 3
    assert PNG_DPI >= 200 and Image.open(tmp_path / "f.png").info["dpi"] == pytest.approx((PNG_DPI, PNG_DPI), abs=0.5)


def test_accuracy_bands_stay_between_0_and_100_percent(tables):
    runs, history = tables
    runs = runs.copy()
    main = runs["study"] == "main"
    runs.loc[main, "test_acc_best"] = np.where(runs.loc[main, "seed"] == 0, 0.01, 0.5)  # seed SD far above the mean
    runs.loc[main, "train_acc_best"] = np.where(runs.loc[main, "seed"] == 0, 0.6, 1.0)
    fig = make_figure("fig1", runs, history)
    bands = [np.concatenate([p.vertices[:, 1] for band in ax.collections for p in band.get_paths()]) for ax in fig.axes[:2]]
    assert all(ys.min() >= 0 and ys.max() <= 100 for ys in bands)
    assert bands[0].min() == 0 and bands[1].max() == 100  # test acc. 25.5 +- 35 %, train acc. 80 +- 28 %: clipped


def test_beta_below_the_verdicts_floor_is_not_drawn():
    import matplotlib.pyplot as plt

    from initmem.figures.common import loglog as _loglog
    from initmem.stats.shapes import BETA_FLOOR

    fig, ax = plt.subplots()
    # float round-off (|beta| 1e-17) would draw as a 12-order "decay" on a log axis
    drawn = _loglog(ax, [1, 2, 3], [3e-3, 1e-3, 1e-17], low=[0, 0, 0], high=[1e-2, 1e-2, 1e-16])
    assert drawn and list(ax.lines[0].get_xdata()) == [1, 2]
    assert ax.collections[0].get_paths()[0].vertices[:, 1].min() >= BETA_FLOOR
    plt.close(fig)


def test_empty_panels_say_no_data_without_an_axis(tables):
    runs, history = tables
    fig = make_figure("fig4", runs[runs["study"] == "main"], history)  # no long, no lr_l2: three empty panels
    fig.canvas.draw()
    for ax in fig.axes:
        assert "no data" in "".join(t.get_text() for t in ax.texts)
        assert not any(t.get_visible() and t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels())
        assert not any(line.get_visible() for line in ax.get_xgridlines() + ax.get_ygridlines())


def test_tau_interp_panels_without_interpolation_say_so_without_an_axis(tables):
    runs, history = tables
    fig = make_figure("fig7", runs.assign(tau_interp=np.nan), history)  # no run reached 99.5% train accuracy
    fig.canvas.draw()
    tau = [ax for ax in fig.axes if ax.texts and "no run interpolated" in ax.texts[0].get_text()]
    assert len(tau) == 4 * 2  # every architecture, both batch sizes
    for ax in tau:
        assert "no data" in ax.texts[0].get_text()
        assert not any(t.get_visible() and t.get_text() for t in ax.get_yticklabels())


def test_log_lines_are_plain_text(tables, capsys):
    runs, history = tables
    h = history[~((history["study"] == "lr_l2") & (history["sigma_w"] != 0.1))]
    fig = make_figure("fig6", runs, h)
    assert "$" in _texts(fig)  # the figure keeps its mathtext ...
    err = capsys.readouterr().err
    assert "fig6:" in err and "$" not in err and "\\" not in err  # ... the log gets plain text


def test_an_unknown_figure_says_which_exist(tables):
    runs, history = tables
    with pytest.raises(ValueError, match="unknown figure 'fig11'; choose one of fig1, .*fig8, fig10"):
        make_figure("fig11", runs, history)


def test_fig6_panels_without_runs_say_not_in_this_tier(tables):
    """The clock tier has no AdamW or Muon runs: its panels said "no |beta| >= 1e-05", as if runs had been drawn."""
    runs, history = tables
    keep = ~history["optimizer"].isin(["adamw", "muon"])
    fig = make_figure("fig6", runs[~runs["optimizer"].isin(["adamw", "muon"])], history[keep])
    texts = {ax.get_title()[:3]: "".join(t.get_text() for t in ax.texts) for ax in fig.axes}
    assert texts["(c)"] == "not in this tier" and texts["(d)"] == "not in this tier"
    assert "not in this tier" not in texts["(a)"]


REPORT = Path(__file__).resolve().parents[1] / "workflow/report"


def _render_caption(name: str, **snakemake) -> str:
    """A report caption as Snakemake renders it: Jinja2 first, then reStructuredText (docutils); the
    docutils warnings and errors (an undefined substitution, a stray markup character) are returned."""
    import io
    from types import SimpleNamespace

    import docutils.core
    import jinja2

    text = jinja2.Template((REPORT / name).read_text()).render(snakemake=SimpleNamespace(**snakemake))
    assert text.strip(), f"{name} renders an empty caption for {snakemake}"
    messages = io.StringIO()
    docutils.core.publish_string(text, writer="html", settings_overrides={"warning_stream": messages, "report_level": 2})
    return messages.getvalue()


@pytest.mark.parametrize("fig", [*FIGURES])
def test_every_figure_caption_renders_without_a_docutils_message(fig):
    assert _render_caption("figure.rst", wildcards=SimpleNamespace(fig=fig)) == ""


def test_figure_9_table_and_workflow_captions_render_without_a_docutils_message():
    config = {"studies": {"main": {}}, "data": {"source": "synthetic", "n_train": 64}, "defaults": {"width": 4}}
    assert _render_caption("fig9.rst") == ""
    assert _render_caption("table.rst", output=["results/tables/runs.csv"]) == ""
    assert _render_caption("workflow.rst", config=config) == ""


@pytest.fixture(scope="module")
def tiny_tables(tmp_path_factory):
    """Tables of the shipped first try's grid (config/tiny.yaml: four optimizers in main, SGD and Adam
    in depth at one batch size), with the synthetic metrics of :func:`fake_record`."""
    from initmem.pipeline.configfiles import load_config
    from initmem.pipeline.grid import expand_studies

    rng = np.random.default_rng(1)
    root = tmp_path_factory.mktemp("tiny-metrics")
    runs, history = [], []
    for study, rs in expand_studies(load_config([Path(__file__).resolve().parents[1] / "config/tiny.yaml"])).items():
        files = []
        for r in rs:
            path = root / study / f"{r.run_id}.json"
            write_json(path, fake_record(study, r.run_id, r.spec, rng))
            files.append(path)
        table, hist = collect(files, study)
        runs.append(table)
        history.append(hist)
    return pd.concat(runs, ignore_index=True), pd.concat(history, ignore_index=True)


def _drawn_labels(ax) -> set[str]:
    """Labels of what a panel draws: its lines and errorbars with a finite point."""
    labels = set()
    for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
        line = handle.lines[0] if isinstance(getattr(handle, "lines", None), tuple) else handle
        if not label.startswith("_") and np.isfinite(np.asarray(line.get_ydata(), float)).any():
            labels.add(label)
    return labels


@pytest.mark.parametrize("name", [*FIGURES])
def test_legends_list_only_what_is_drawn_and_every_row_has_a_ylabel(tiny_tables, name):
    runs, history = tiny_tables
    if name == "fig10":  # the clock tier's figure: the first try has no clock study, the evidence tier's grid then
        runs, history = _clock_tables()
    fig = make_figure(name, runs, history)
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.get_subplotspec() is not None and ax.get_label() != "<colorbar>"]
    figure_legend = {t.get_text() for legend in fig.legends for t in legend.get_texts()}
    if figure_legend:
        assert figure_legend == set().union(*(_drawn_labels(ax) for ax in panels))
    for ax in panels:
        if ax.get_legend() is not None:
            assert {t.get_text() for t in ax.get_legend().get_texts()} == _drawn_labels(ax), ax.get_title()
    rows: dict[int, list] = {}
    for ax in panels:
        if _drawn_labels(ax) or ax.images:
            rows.setdefault(ax.get_subplotspec().rowspan.start, []).append(ax)
    for row, drawn in rows.items():
        leftmost = min(drawn, key=lambda a: a.get_subplotspec().colspan.start)
        assert leftmost.get_ylabel(), f"{name}: row {row} has no y label"
        assert any(t.get_visible() and t.get_text() for t in leftmost.get_yticklabels()), f"{name}: row {row} has no y tick labels"


def test_overlapping_optimizers_stay_visible_and_figure_2_names_its_spread_axis(tiny_tables):
    runs, history = tiny_tables
    for name in ("fig1", "fig3"):
        lines = {line.get_label(): line for line in make_figure(name, runs, history).axes[0].lines}
        adam, adamw = lines["Adam"], lines["AdamW"]  # the same curve when weight decay is 0
        assert (adam.get_linestyle(), adam.get_marker()) != (adamw.get_linestyle(), adamw.get_marker())
    fig = make_figure("fig2", runs, history)
    right = [child for ax in fig.axes for child in ax.child_axes if child.get_ylabel()]
    assert [r.get_ylabel() for r in right] == ["spread over $\\sigma_w$ (pp)"]
    assert right[0].yaxis.label.get_fontsize() >= fig.axes[0].yaxis.label.get_fontsize()


def _clock_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figure 10's input: the clock tier's grid (tests/helpers/clock_figure.py), Adam at two (lr, b) and SGD."""
    from helpers.clock_figure import figure10_history

    history = figure10_history([("adam", 0.01, 16, 0.0), ("adam", 0.1, 32, 0.0), ("sgd", 0.3, 16, 0.0), ("sgd", 0.3, 16, 0.01)])
    return history.drop_duplicates("run_id"), history


def test_depth_figures_show_the_depth_studys_optimizers_and_label_a_row_whose_first_panel_is_empty(tiny_tables):
    runs, history = tiny_tables
    runs = runs.copy()
    runs.loc[runs["study"] == "main", "tau_interp"] = np.nan  # no ResNet-9 run interpolated: its tau_interp panel is empty
    depth_optimizers = {"SGD", "Adam"}  # config/tiny.yaml's depth study; main has four
    for name in ("fig5", "fig7"):
        fig = make_figure(name, runs, history)
        assert {t.get_text() for legend in fig.legends for t in legend.get_texts()} == depth_optimizers
    fig.canvas.draw()
    lower = [ax for ax in fig.axes if ax.get_subplotspec().rowspan.start == 1 and _drawn_labels(ax)]
    assert lower and min(lower, key=lambda a: a.get_subplotspec().colspan.start).get_ylabel() == "$\\tau_{interp}$ (epoch)"


def _footnote(fig) -> str:
    label = getattr(fig, "_supxlabel", None)
    return label.get_text() if label is not None else ""


def test_a_figure_of_runs_near_chance_says_on_the_figure_that_it_is_a_demo(tiny_tables, capsys):
    """Issue 64: the embedded default's runs learn next to nothing (test accuracy 5-17%, chance 10%); every
    figure of such runs says so in its footnote (and its log), first; runs that learned say nothing of it."""
    runs, history = tiny_tables
    rng = np.random.default_rng(2)
    near = runs.assign(test_acc_best=rng.uniform(0.05, 0.17, len(runs)))
    for name in ("fig1", "fig6", "fig7"):
        note = _footnote(make_figure(name, near, history)).splitlines()[0]
        assert note.startswith("* DEMO: test accuracy") and "chance 10%" in note and "learned next to nothing" in note
        assert f"{name}: DEMO: test accuracy" in capsys.readouterr().err
        assert "DEMO" not in _footnote(make_figure(name, runs, history))  # fake_record's runs reach 65-70%
    # chance is the data source's: on CIFAR-100 (1%), 12% is not near it
    assert "DEMO" not in _footnote(make_figure("fig1", near.assign(test_acc_best=0.12), history, data={"source": "cifar100"}))


def test_a_figure_of_runs_on_a_repacked_copy_or_synthetic_images_says_so(tiny_tables):
    """config/jpeg-copy.yaml (data.verify_md5: false over the archive source): the figure names the copy;
    synthetic images are named too; the official archive, verified, adds nothing."""
    runs, history = tiny_tables
    jpeg = {"source": "archive", "archive": "data/cifar-10-python.tar.gz", "verify_md5": False}
    note = _footnote(make_figure("fig1", runs, history, data=jpeg))
    assert "not the official CIFAR-10 pixels" in note and "config/jpeg-copy.yaml" in note
    assert "synthetic images" in _footnote(make_figure("fig1", runs, history, data={"source": "synthetic"}))
    official = _footnote(make_figure("fig1", runs, history, data={**jpeg, "verify_md5": True}))
    assert "official" not in official and "synthetic" not in official


def test_the_workflows_data_config_reaches_the_figure(tiny_tables, monkeypatch):
    """A figure job reads its runs' data config from the environment the workflow sets (INITMEM_DATA_CONFIG)."""
    import json

    runs, history = tiny_tables
    monkeypatch.setenv("INITMEM_DATA_CONFIG", json.dumps({"source": "archive", "archive": "x.tar.gz", "verify_md5": False}))
    assert "not the official CIFAR-10 pixels" in _footnote(make_figure("fig3", runs, history))


def test_a_row_whose_every_panel_is_empty_keeps_its_quantity_label(tiny_tables):
    """Figure 7 of runs that never interpolated: every tau_interp panel says 'no data', and the row still says
    it is tau_interp (issue 64: the demo's second row had no label)."""
    runs, history = tiny_tables
    fig = make_figure("fig7", runs.assign(tau_interp=np.nan), history)
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.get_subplotspec() is not None]
    rows = sorted({ax.get_subplotspec().rowspan.start for ax in panels})
    for row in rows:
        first = min((ax for ax in panels if ax.get_subplotspec().rowspan.start == row), key=lambda a: a.get_subplotspec().colspan.start)
        assert first.get_ylabel(), f"fig7: row {row} has no quantity label"
    last = [ax for ax in panels if ax.get_subplotspec().rowspan.start == rows[-1]]
    assert all("no run interpolated" in "".join(t.get_text() for t in ax.texts) for ax in last)
    assert min(last, key=lambda a: a.get_subplotspec().colspan.start).get_ylabel() == "$\\tau_{interp}$ (epoch)"
