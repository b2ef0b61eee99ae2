# The theory, runnable: Figure 9 (the deep-linear-network check) and the forgetting clocks of every
# configuration. Neither needs a training study, so both are built in every config. Figure 9 and
# linear_check.csv are the same for every config: they say nothing of which config wrote a folder.

localrules:
    linear_check,
    clocks_table,


rule linear_check:
    """Figure 9 and results/tables/linear_check.csv: imbalance conservation, leakage and contraction
    in deep linear networks (float64 numpy, about ten CPU seconds)."""
    output:
        pdf=f"{FIGURES_DIR}/fig9.pdf",
        png=report(f"{FIGURES_DIR}/fig9.png", caption="../report/fig9.rst", category="Figures", labels={"figure": "fig9"}),
        table=report(f"{TABLES_DIR}/linear_check.csv", caption="../report/table.rst", category="Tables", labels={"table": "linear_check.csv"}),
    params:
        analysis=ANALYSIS["linear_check"],  # the code's version: an edit to theory/ or figures/ redraws it
    log:
        f"{LOGS_DIR}/figures/fig9.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/linear_check.py"


rule clocks_table:
    """results/tables/clocks.csv: every configuration of the configured studies with its exact final
    T_sgd, T_l2, T_wd, T_adapt (the closed-form sums the trainer records, torch-free), the paper's
    constant-lr arithmetic beside them, its governing clock and the nearest paper point of the same
    kind with the distance in orders of magnitude (initmem.theory.calculator). It waits for this
    config's data (it reads none): an invocation whose data cannot be prepared rewrites no table."""
    input:
        ancient(DATA),
    output:
        f"{TABLES_DIR}/clocks.csv",
    params:
        studies=config["studies"],
        defaults=config["defaults"],
        n_train=config["data"]["n_train"],
        analysis=ANALYSIS["clocks"],  # the code's version: an edit to theory/ or the clocks recomputes it
    log:
        f"{LOGS_DIR}/clocks_table.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/clocks_table.py"
