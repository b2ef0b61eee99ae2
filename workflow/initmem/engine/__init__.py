"""The training engine: one run or a vectorised pack trained exactly as the paper's Appendix A says
(Keras semantics), and everything that decides a run's numbers.

loop (the one training loop: epochs, checkpoints, resume, stopping), train (a single run's model and
step), packed (vmap packs), streams (the data a run sees: order, augmentation), compute (precision,
torch.compile), models (architectures, sigma_w init), optim (Keras optimizers),
clocks (schedule and clock sums), data (CIFAR-10 split), checkpoint (resumable state), device (which
GPU, what is recorded), metrics (the record's format). Imports only :mod:`initmem.spec`,
:mod:`initmem.io` and each other; never the pipeline, claims or figures above it.
"""
