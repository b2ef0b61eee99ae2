"""The training engine: one run or a vectorised pack trained exactly as the paper's Appendix A says
(Keras semantics), and everything that decides a run's numbers.

models (architectures, sigma_w init), optim (Keras optimizers), train (one run), packed (vmap packs),
clocks (schedule and clock sums), data (CIFAR-10 split), checkpoint (resumable state), device (which
GPU, what is recorded), metrics (the record's format). Imports only :mod:`initmem.spec`,
:mod:`initmem.io` and each other; never the pipeline, claims or figures above it.
"""
