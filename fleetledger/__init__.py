"""fleetledger: a FinOps and utilization warehouse for GPU fleets."""

__version__ = "0.1.0"
