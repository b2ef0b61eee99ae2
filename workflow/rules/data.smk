localrules:
    prepare_data,


rule prepare_data:
    """Read CIFAR-10 once (torchvision, local archive, or synthetic) into one compact split file."""
    output:
        DATA,
    params:
        data=config["data"],
    log:
        "results/logs/prepare_data.log",
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/prepare_data.py"


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
