"""The training engine: one run or a vectorised pack trained exactly as the paper's Appendix A says
(Keras semantics), and everything that decides a run's numbers.

loop (the one training loop: epochs, checkpoints, resume, stopping), settings (how a job trains: one
TrainSettings from its JSON down to the loop), train (a single run's model and
step), packed (vmap packs), streams (the data a run sees: order, augmentation), compute (precision,
torch.compile), models (shared layers, sigma_w init; architectures/ one file each), optim (the Keras
optimizers' shared core; optimizers/ one file each), registry (finding an entry by name), clocks
(schedule and clock sums), data (the split, resolution, prepared files; datasources/ one file each), checkpoint (resumable state), device (which
GPU, what is recorded), metrics (the record's format). Imports only :mod:`initmem.spec`,
:mod:`initmem.io` and each other; never the pipeline, claims or figures above it.
"""
