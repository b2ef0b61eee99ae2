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
