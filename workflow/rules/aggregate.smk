localrules:
    collect_study,
    tables,


rule collect_study:
    """One study's metrics files -> a row per run and a row per (run, epoch)."""
    input:
        lambda w: run_files(w.study),
    output:
        runs="results/tables/studies/{study}.runs.csv",
        history="results/tables/studies/{study}.history.csv.gz",
    params:
        analysis=ANALYSIS,  # the analysis code's version: an edit there reruns tables, never training
    log:
        "results/logs/collect/{study}.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/collect_study.py"


rule tables:
    """All studies -> runs.csv, history, spreads, OLS |beta(t)|, claims, Markdown paper tables."""
    input:
        runs=[f"results/tables/studies/{s}.runs.csv" for s in STUDIES],
        history=[f"results/tables/studies/{s}.history.csv.gz" for s in STUDIES],
    output:
        **{
            name.split(".")[0] + ("_md" if name.endswith(".md") else ""): (
                report(f"results/tables/{name}", caption="../report/table.rst", category="Tables", labels={"table": name})
                if name in REPORT_TABLES
                else f"results/tables/{name}"
            )
            for name in TABLES
        },
    params:
        analysis=ANALYSIS,
    log:
        "results/logs/tables.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/tables.py"
