localrules:
    prepare_data,
    data,


rule prepare_data:
    """Read CIFAR-10 once (torchvision, local archive, or synthetic) into one compact split file per
    data identity: results/data/<identity>/cifar10.npz. The folder's name is a hash of what decides
    the split's content (not the archive's path, not a key added at its default) and of the data
    code, so a file is never replaced: it runs only when its file is missing (no params: a job that
    reruns for a reason of its own would hide the training jobs from Snakemake, docs/reruns.md)."""
    output:
        DATA,
    priority: 100  # first: every training job waits for it
    log:
        f"results/logs/prepare_data/{Path(DATA).parent.name}.log",
    conda:
        "../../envs/train.yaml"
    shell:
        'PYTHONPATH="$INITMEM_LIBRARY" "$INITMEM_PYTHON" -m initmem prepare {output:q} --config-json "$INITMEM_DATA_CONFIG" --log {log:q}'


if FINAL_DATA:

    localrules:
        prepare_final_test,

    rule prepare_final_test:
        """The test split's first final_test images, where the config's runs evaluate their selected network
        on more of them than data.n_test (initmem.pipeline.grid.final_test_size): a prepared file of those
        test images alone, results/data/<identity with n_test = final_test>/test.npz, written once like the
        prepared data (initmem.pipeline.identity.final_test_file); an input only of the packs that need it."""
        output:
            FINAL_DATA,
        params:
            n=FINAL_TEST,
        priority: 100
        log:
            f"results/logs/prepare_data/{Path(FINAL_DATA).parent.name}-test.log",
        conda:
            "../../envs/train.yaml"
        shell:
            'PYTHONPATH="$INITMEM_LIBRARY" "$INITMEM_PYTHON" -m initmem prepare {output:q} --config-json "$INITMEM_DATA_CONFIG" '
            "--final-test {params.n} --log {log:q}"


localrules:
    resolved_config,


rule resolved_config:
    """The effective configuration of this invocation (provenance; also shows that a --configfile
    with studies replaced the embedded default), its first line naming the config files; an
    invocation that ran jobs also writes it at its end, whatever its target (the Snakefile's
    onsuccess/onerror handlers), never a dry run or an invocation refused for the lock."""
    output:
        RESOLVED_CONFIG,
    params:
        config=config,
    log:
        f"{LOGS_DIR}/resolved_config.log",
    run:
        record_provenance(output[0], params.config, json.loads(os.environ[INVOCATION_ENV])["configfiles"], log[0])


rule data:
    """Target: this config's prepared split (snakemake --cores 1 data)."""
    input:
        DATA,
