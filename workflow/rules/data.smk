localrules:
    prepare_data,


rule prepare_data:
    """Read CIFAR-10 once (torchvision, local archive, or synthetic) into one compact split file.
    Reruns only when what decides the split's content changes (not the archive's path, not a key
    added at its default), or the data code does."""
    output:
        DATA,
    priority: 100  # first: every training job waits for it
    params:
        identity=DATA_ID,
        code=DATA_CODE,
    log:
        "results/logs/prepare_data.log",
    conda:
        "../../envs/train.yaml"
    shell:
        'PYTHONPATH="$INITMEM_LIBRARY" "$INITMEM_PYTHON" -m initmem prepare {output:q} --config-json "$INITMEM_DATA_CONFIG" --log {log:q}'


localrules:
    resolved_config,


rule resolved_config:
    """The effective configuration of this invocation (provenance; also shows that a --configfile
    with studies replaced the embedded default)."""
    output:
        "results/config.resolved.yaml",
    params:
        config=config,
    log:
        "results/logs/resolved_config.log",
    run:
        write_yaml(output[0], params.config, log[0])
