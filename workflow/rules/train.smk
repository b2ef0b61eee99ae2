if PACKED:

    rule train:
        """One job per pack: runs that differ only in sigma_w and seed, one metrics record each."""
        input:
            data=DATA,
        output:
            pack="results/packs/{study}/{pack}.json",
        params:
            runs=pack_members,
            checkpoint_dir=lambda w: f"results/checkpoints/{w.study}",
            **TRAIN_PARAMS,
        threads: config["compute"]["threads"]
        resources:
            **train_resources(lambda w: [r["spec"] for r in pack_members(w)]),
        log:
            "results/logs/train/{study}/{pack}.log",
        conda:
            "../../envs/train.yaml"
        script:
            "../scripts/train.py"

    localrules:
        run_metrics,

    rule run_metrics:
        """One metrics file per run, cut from its pack's file."""
        input:
            pack_of_run,
        output:
            "results/runs/{study}/{run_id}.json",
        params:
            python=PYTHON,
            library=LIBRARY_DIR,
        log:
            "results/logs/runs/{study}/{run_id}.log",
        conda:
            "../../envs/analysis.yaml"
        # a shell job runs in a thread; a `run:` job would re-parse the whole workflow per run
        shell:
            "PYTHONPATH={params.library:q} {params.python:q} -m initmem extract-run {input:q} {wildcards.run_id:q} {output:q} {log:q}"

else:

    rule train:
        """One job per run (pack.max_models: 1), writing its metrics file directly."""
        input:
            data=DATA,
        output:
            run="results/runs/{study}/{run_id}.json",
        params:
            runs=single_run,
            checkpoint_dir=lambda w: f"results/checkpoints/{w.study}",
            **TRAIN_PARAMS,
        threads: config["compute"]["threads"]
        resources:
            **train_resources(lambda w: [r["spec"] for r in single_run(w)]),
        log:
            "results/logs/train/{study}/{run_id}.log",
        conda:
            "../../envs/train.yaml"
        script:
            "../scripts/train.py"


rule runs:
    """Target: every metrics file of the configured studies."""
    input:
        [f for study in STUDIES for f in run_files(study)],
