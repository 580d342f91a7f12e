"""The code location `dagster dev` and `dg dev` load (pyproject `[tool.dagster]`, `[tool.dg]`)."""

from __future__ import annotations

from orchestration.build import build_definitions

defs = build_definitions()
