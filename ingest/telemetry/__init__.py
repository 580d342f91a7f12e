"""Telemetry sources: DCGM in every shape (exporter scrapes, live Prometheus, long exports,
nvidia-smi logs) and power (facility meters, node GPU rollups); their kind specs are in kinds.py."""
