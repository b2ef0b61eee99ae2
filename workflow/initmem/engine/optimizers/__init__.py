"""Optimizers, one file per optimizer, selected by the spec's ``optimizer`` (the file's name).

An entry holds only its own rule; :class:`initmem.engine.optim.KerasOptimizer` holds the flat
buffers, the decoupled or coupled weight decay (applied before the entry's update), masking and
packing. A file declares, as module-level literals that the config reads without importing it:

- ``WEIGHT_DECAY``: the decoupled decay applied when the spec says null (absent: 0);
- ``MOMENTUM``: the momentum used when the spec says null (absent: 0);
- ``CLOCK``: ``"T_adapt"`` for a fixed-size-per-coordinate update (the adaptive clock), else ``"T_sgd"``;
- ``SLOTS``: its state buffers, each over ``"all"`` elements or the ``"elementwise"`` ones (those
  not orthogonalised);
- ``ORTHOGONALISES``: the tensor ranks that get a matrix step (Muon), default none;

and a function ``update(opt, p, g, lr, t)``: one step on the flat parameters ``p`` with the flat
gradient ``g``, the scheduled rate ``lr`` and the step count ``t`` (both may be 0-d tensors), reading
its slots from ``opt.slots`` (see docs/extending.md).
"""
