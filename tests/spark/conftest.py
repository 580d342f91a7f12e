"""tests/spark/: the dbt project built on Spark (dbt-spark, a local PySpark session; Java 17)
and compared with the DuckDB build. `make test-spark` runs these; `make test` does not collect
them (tests/conftest.py, `collect_ignore_glob`)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: builds the warehouse on Spark (make test-spark)")
