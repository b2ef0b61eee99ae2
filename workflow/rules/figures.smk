localrules:
    figure,
    figures,


rule figure:
    """One paper figure; it reads only the studies it shows (snakemake figures/fig6.pdf)."""
    input:
        figure_inputs,
    output:
        pdf="figures/{fig}.pdf",
        png=report("figures/{fig}.png", caption="../report/figure.rst", category="Figures", labels={"figure": "{fig}"}),
    params:
        analysis=ANALYSIS,
    log:
        "results/logs/figures/{fig}.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/figure.py"


rule figures:
    """Target: every figure this config's studies support."""
    input:
        ALL_FIGURES,
