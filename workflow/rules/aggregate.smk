localrules:
    collect_study,
    tables,


rule collect_study:
    """One study's metrics files -> a row per run and a row per (run, epoch)."""
    input:
        lambda w: run_files(w.study),
    output:
        runs=f"{TABLES_DIR}/studies/{{study}}.runs.csv",
        history=f"{TABLES_DIR}/studies/{{study}}.history.csv.gz",
    params:
        analysis=ANALYSIS["tables"],  # the analysis code's version: an edit there reruns tables, never training
    log:
        f"{LOGS_DIR}/collect/{{study}}.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/collect_study.py"


rule tables:
    """All studies -> runs.csv, history, spreads, OLS |beta(t)|, claims, Markdown paper tables."""
    input:
        runs=[f"{TABLES_DIR}/studies/{s}.runs.csv" for s in STUDIES],
        history=[f"{TABLES_DIR}/studies/{s}.history.csv.gz" for s in STUDIES],
    output:
        **{
            name.split(".")[0] + ("_md" if name.endswith(".md") else ""): (
                report(f"{TABLES_DIR}/{name}", caption="../report/table.rst", category="Tables", labels={"table": name})
                if name in REPORT_TABLES
                else f"{TABLES_DIR}/{name}"
            )
            for name in TABLES
        },
    params:
        analysis=ANALYSIS["tables"],
    log:
        f"{LOGS_DIR}/tables.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/tables.py"
