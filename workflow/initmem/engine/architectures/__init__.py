"""Architectures, one file per ``arch`` value (the file's name).

An entry defines ``build(width, norm, pool, classes) -> nn.Module`` (and the module's classes that
only it uses); the Keras layers (convolution, norms), the shared blocks, the sigma_w initialisation
and the kernel norm stay in :mod:`initmem.engine.models`, so every architecture is initialised,
regularised and measured the same way (see docs/extending.md).
"""
