"""initmem: reproduce "Do Deep Networks Forget Initialization?" on CIFAR-10 ResNets.

The library holds all the science (data, models, Keras-semantics optimizers, training, analysis,
figures); the Snakemake rules under ``workflow/rules`` only wire files to these functions.
"""

__version__ = "0.1.0"
