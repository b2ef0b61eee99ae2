"""What a training job costs and asks of the machine, torch-free (the Snakefile reads it on every parse).

facts (an entry's cost-model numbers, read from its registry file), rates (the rate model: images/s of
a job, measured or stated), compilecost (the minutes and host memory ``torch.compile`` adds) and
timelimit (the Slurm partition's time limit), versions (the software a rate table was measured with) and
levers (what ``estimate``'s hours assume, each measured, default or assumed). Imports only the spec; the pipeline sizes its jobs and
estimates with it, and no run's key holds it.
"""
