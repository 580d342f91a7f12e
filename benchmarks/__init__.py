"""Benchmarks: `python -m benchmarks.<name>` (see docs/benchmarks.md)."""
