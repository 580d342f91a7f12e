# fleetledger: `make demo` builds a 30-day demo warehouse; `make test` runs the test suite.
# Works on a fresh machine with python3 + pip: uv is installed (user site) when missing.

SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
VENV := .venv

.PHONY: demo test test-fast test-spark sync-spark lint app bench uv sync sync-dev system-deps clean

uv:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || \
	  python3 -m pip install --user --quiet uv || \
	  python3 -m pip install --user --quiet --break-system-packages uv || \
	  python3 -m pip install --quiet uv

# --inexact: keep the dev extras when they are installed (a plain sync would remove them).
# --compile-bytecode: imports of dagster, dbt and great_expectations are several times faster
# with .pyc files, and PYTHONDONTWRITEBYTECODE may keep Python from writing them itself.
sync: uv
	$(UV) sync --frozen --inexact --compile-bytecode

sync-dev: uv
	$(UV) sync --frozen --extra dev --compile-bytecode

demo: sync
	$(VENV)/bin/fleetledger demo

# system packages the tests use (prometheus + promtool for the live-Prometheus DCGM test,
# chromium for the browser tests in tests/browser/)
system-deps:
	bash .ci/install-system-deps.sh

# the whole suite, one pytest-xdist worker per core; a test file stays on one worker (its
# module fixtures are built once), and the files using the pipeline-built fleets share one
# worker (each fleet is built once: tests/conftest.py, pytest_xdist_make_scheduler)
test: sync-dev system-deps
	$(VENV)/bin/pytest -n auto

# dbt-spark and pyspark: the locked dev environment plus the optional extra `spark`
sync-spark: uv
	$(UV) sync --frozen --extra dev --extra spark --compile-bytecode

# the warehouse built on Spark (a local PySpark session; Java 17 from system-deps) and compared
# with the DuckDB build, mart by mart: tests/spark/ (not part of `make test`)
test-spark: sync-spark system-deps
	FLEETLEDGER_TEST_SPARK=1 $(VENV)/bin/pytest tests/spark -m spark

# the fast tier: every test that needs no built warehouse, on every core (pytest-xdist)
test-fast: sync-dev
	$(VENV)/bin/pytest -m "not warehouse" -n auto

lint: sync-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

app: sync
	$(VENV)/bin/fleetledger app

# the scale benchmark (docs/performance.md): 1,024 GPUs x 7 days x 30 s by default; options in
# BENCH_ARGS, e.g. make bench BENCH_ARGS="--gpus 128 --days 2 --scrape-interval 60"
bench: sync
	$(VENV)/bin/fleetledger bench $(BENCH_ARGS)

clean:
	rm -rf data dbt_project/target dbt_project/logs .pytest_cache .ruff_cache
