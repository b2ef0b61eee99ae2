localrules:
    figure,
    figures,


rule figure:
    """One paper figure; it reads only the studies it shows (snakemake figures/fig6.pdf)."""
    input:
        figure_inputs,
    output:
        pdf=f"{FIGURES_DIR}/{{fig}}.pdf",
        png=report(f"{FIGURES_DIR}/{{fig}}.png", caption="../report/figure.rst", category="Figures", labels={"figure": "{fig}"}),
    params:
        analysis=ANALYSIS["figures"],
    log:
        f"{LOGS_DIR}/figures/{{fig}}.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/figure.py"


rule figures:
    """Target: every figure this config's studies support."""
    input:
        ALL_FIGURES,
