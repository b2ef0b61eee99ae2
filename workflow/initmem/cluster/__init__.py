"""What training jobs share on a cluster's file system, torch-free: the lease that keeps one trainer per pack
(packlock: a POSIX lock where the file system has them, and a lease naming the job, checked by pid or
``squeue``) and where ``torch.compile``'s caches live (compilecache: Inductor's shared and warmed by one job per
shape, Triton's on the node). Imports only ``io``; the pipeline's jobs and the Snakefile use it.
"""
