"""A process's scheduler context: which job it belongs to (Slurm, Kubernetes, torchrun,
a plain process tree) and what its launcher set in its environment."""
