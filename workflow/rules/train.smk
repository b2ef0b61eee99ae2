rule train:
    """One job per pack: runs that differ only in sigma_w and seed, one metrics record each."""
    input:
        data=DATA,
    output:
        pack="results/packs/{study}/{pack}.json",
    params:
        runs=pack_members,
        device=config["compute"]["device"],
        checkpoint_dir=lambda w: f"results/checkpoints/{w.study}",
        checkpoint_every=config["checkpoint"]["every_epochs"],
        keep_checkpoints=config["checkpoint"]["keep"],
    threads: config["compute"]["threads"]
    resources:
        gpu=0,
        runtime=lambda w: pack_runtime_minutes([r["spec"] for r in pack_members(w)], config["compute"]["images_per_second"]),
        mem_mb=lambda w: pack_mem_mb([r["spec"] for r in pack_members(w)]),
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
    run:
        extract_run(input[0], wildcards.run_id, output[0])


rule runs:
    """Target: every metrics file of the configured studies."""
    input:
        [f for study in STUDIES for f in run_files(study)],
