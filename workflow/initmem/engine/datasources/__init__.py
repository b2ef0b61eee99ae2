"""Data sources, one file per ``data.source`` value (the file's name).

An entry defines ``load(data_cfg, download_root) -> (x_pool, y_pool, x_test, y_test)``: uint8
images (N, 3, 32, 32) and int64 labels of the pool the fixed split draws from and of the test set.
Its literals, read without importing it: ``ORIGIN`` (the identity of its official pixels: two sources
with the same ORIGIN give the same prepared data; absent for generated data), ``HOLDOUT`` (validation
images held out of the pool; None: ``data.n_val``), ``CLASSES`` (label count). The split, the
resolution and the prepared file stay in :mod:`initmem.engine.data` (see docs/extending.md).
"""
