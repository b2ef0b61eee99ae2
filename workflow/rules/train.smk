# Training: a plan per pack (which runs train together, with their identity keys), one job per
# pack, one metrics file per run cut from the pack file. What triggers a retrain, and what never
# does, is docs/reruns.md.


localrules:
    plan_pack,
    run_metrics,


# WARNING: Snakemake compares the text of a rule's `run:` block and shell command (rerun trigger
# `code`): an edit to plan_pack's `run:` block or to train's shell command, even a space, reruns
# every job of that rule, i.e. retrains every pack of every study (docs/reruns.md).
rule plan_pack:
    """A pack's members and each run's identity key: rewritten (and so retrained) exactly when a
    key changes (spec, data content, trainer code, precision)."""
    output:
        "results/plans/{study}/{pack}.json",
    params:
        members=plan_members,
    log:
        "results/logs/plans/{study}/{pack}.log",
    run:
        write_plan(output[0], params.members)
        Path(log[0]).write_text(f"planned {len(params.members)} run(s)\n")


# WARNING: editing this rule's shell command retrains every pack (see the note above plan_pack).
rule train:
    """One job per pack: runs that differ only in sigma_w and seed, one metrics record each."""
    input:
        # the plan is rewritten exactly when a member's key changes, and its new mtime retrains the
        # pack; the data's mtime is no reason (a content change changes every key, hence the plans)
        plan="results/plans/{study}/{pack}.json",
        data=ancient(DATA),
        # the test split's first final_test images where the pack's runs need more than DATA's (none otherwise)
        final=final_test_input,
    output:
        pack="results/packs/{study}/{pack}.json",
    priority: 10  # training before the jobs that can fill the gaps (Figure 9, the clock table)
    threads: config["compute"]["threads"]
    resources:
        **train_resources(),
    log:
        "results/logs/train/{study}/{pack}.log",
    conda:
        "../../envs/train.yaml"
    # exec: the trainer replaces the job's shell, so a SIGTERM to the job (Slurm before a time limit,
    # scancel) reaches the trainer, which checkpoints and exits for a requeue; without it a shell that
    # does not replace itself (bash < 5.1) dies at once and the trainer is killed mid-save
    shell:
        'PYTHONPATH="$INITMEM_LIBRARY" exec "$INITMEM_PYTHON" -m initmem train-plan {input.plan:q} {input.data:q} {output.pack:q} '
        '--settings "$INITMEM_TRAIN_SETTINGS" --threads {threads} --checkpoint-dir results/checkpoints/{wildcards.study} '
        "--log {log:q}"


rule run_metrics:
    """One metrics file per run, cut from its pack's file (checked against the run's key)."""
    input:
        # a damaged or touched pack file is no reason to cut its runs again (a failed job would
        # delete the good run file first); a rewritten plan is (the pack retrains before this runs)
        pack=ancient(pack_of_run),
        plan=plan_of_run,
    output:
        "results/runs/{study}/{run_id}.json",
    params:
        key=run_key_of,
    log:
        "results/logs/runs/{study}/{run_id}.log",
    conda:
        "../../envs/analysis.yaml"
    # a shell job runs in a thread; a `run:` job would re-parse the whole workflow per run
    shell:
        'PYTHONPATH="$INITMEM_LIBRARY" "$INITMEM_PYTHON" -m initmem extract-run {input.pack:q} {wildcards.run_id:q} {output:q} {log:q} '
        
        "--key {params.key:q}"


rule runs:
    """Target: every metrics file of the configured studies."""
    input:
        [f for study in STUDIES for f in run_files(study)],
