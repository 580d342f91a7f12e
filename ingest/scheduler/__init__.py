"""Scheduler sources: Slurm (sacct files or command, node events), Kubernetes (pod dumps,
kube-state-metrics), Kueue workloads and job log checkpoints; their kind specs are in kinds.py."""
