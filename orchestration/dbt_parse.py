"""A home's first build: one parse cache for every home, else a parse while the run starts.

dbt keeps a parse cache (`partial_parse.msgpack`) and re-parses only the files that changed
since, but only when the cache was made with the same vars and profile (and re-parses every file
that read an environment variable whose value changed). Parsing the whole project costs about
8 CPU-seconds, on every new home: each test fleet's, each benchmark home's, a new deployment's.

So parsing reads nothing of the home. The DuckDB profile opens `./warehouse.duckdb` (and
`./history.duckdb`) when the pipeline runs dbt in the home's `build/` folder with
FLEETLEDGER_DUCKDB_DIR="." (`shared_profile_env`, `dbt_working_dir`), and the landing sources
name their files `$LANDING/...`, which the staging models' `landing()` macro replaces by
$FLEETLEDGER_HOME/raw when they run (dbt_project/macros/landing.sql). The project's own parse
(`orchestration.dbt._prepare`, for the asset graph) is made with the default vars and warehouse
settings, and a home whose config keeps those defaults (`shares_project_parse`) starts with a
copy of it (`seed_home_parse`): its first build parses nothing. dbt still checks the copy as it
checks any cache, and parses what differs (a model edited since) or everything (a cache of
another dbt version).

A home with its own settings (`health:` or `economics:` values, `warehouse.memory_limit` or
`threads`, the Spark engine) cannot use that copy. For such a home without a cache of its own,
`fleetledger run` starts `dbt parse`, with the build's vars, target and profile environment, as
a child process before it loads the definitions, on the CPU that loading them and starting the
run leave idle (`prepare_home_parse`); the dbt step waits for it and adopts its cache
(`adopt_prepared_parse`) before it builds; a parse that failed or did not finish leaves no
cache, and the build parses in full. A later build of any home reuses the cache its last build
left in `build/dbt/` (orchestration/dbt.py, `keep_partial_parse`)."""

from __future__ import annotations

import json
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster_dbt.core.dbt_cli_invocation as dbt_cli_invocation
from dagster_dbt import DbtCliResource

from fleetledger.child_processes import children_die_with_parent
from fleetledger.config import Config, HealthSettings
from fleetledger.config_economics import EconomicsSettings
from fleetledger.config_warehouse import WarehouseSettings
from fleetledger.env_vars import environment

PARTIAL_PARSE = "partial_parse.msgpack"
#: the folder of the DuckDB warehouse files in the profile (dbt_project/profiles.yml): "." while
#: the pipeline runs dbt in the home's `build/`; unset (dbt run by hand), $FLEETLEDGER_HOME/build
DUCKDB_DIR_ENV = "FLEETLEDGER_DUCKDB_DIR"
# how long the dbt step waits for a parse still running (a parse takes seconds)
ADOPT_TIMEOUT_S = 120.0


def config_dbt_vars(cfg: Config | None) -> dict[str, Any]:
    """The config's `health:` and `economics:` settings as dbt vars (the defaults without a
    config). They stay the same from run to run, so dbt's parse cache stays valid; what differs
    per run reaches the models as environment variables."""
    if cfg is None:
        return {**HealthSettings().dbt_vars(), **EconomicsSettings().dbt_vars()}
    return {**cfg.health.dbt_vars(), **cfg.economics.dbt_vars()}


def shared_profile_env(settings: WarehouseSettings) -> dict[str, str]:
    """The environment the DuckDB profile renders with when the pipeline runs dbt: the same for
    every home with these warehouse settings (dbt runs in `dbt_working_dir`)."""
    return {DUCKDB_DIR_ENV: ".", **settings.env()}


def dbt_working_dir(home: Path) -> Path:
    """Where the pipeline runs dbt on DuckDB: the home's `build/`, where the profile's relative
    warehouse paths lead."""
    return home / "build"


def project_parse_cache(project_dir: Path) -> Path:
    """The parse cache of the project's own parse: `<project>/target/partial_parse.msgpack`."""
    return project_dir / "target" / PARTIAL_PARSE


def shares_project_parse(cfg: Config | None) -> bool:
    """Whether a home's builds see what the project's own parse saw: the default vars and
    warehouse settings, on DuckDB (what dbt compares before it uses a cache)."""
    settings = cfg.warehouse if cfg is not None else WarehouseSettings()
    return (
        settings.engine == "duckdb"
        and settings.dbt_target == WarehouseSettings().dbt_target
        and config_dbt_vars(cfg) == config_dbt_vars(None)
        and settings.env() == WarehouseSettings().env()
    )


def seed_parse_cache(cache: Path, project_dir: Path) -> bool:
    """Copy the project's parse cache to `cache` (written beside it, then renamed in) when there
    is none there yet; whether it did."""
    made = project_parse_cache(project_dir)
    if cache.exists() or not made.is_file():
        return False
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.parent / f".{PARTIAL_PARSE}.seed"
    shutil.copy(made, tmp)
    tmp.replace(cache)
    return True


def seed_home_parse(home: Path, cfg: Config | None, project_dir: Path) -> bool:
    """Copy the project's parse cache as the home's when the home has none and shares it;
    whether it did."""
    return shares_project_parse(cfg) and seed_parse_cache(home_parse_cache(home), project_dir)


def home_parse_cache(home: Path) -> Path:
    """The parse cache a home's builds share: `build/dbt/partial_parse.msgpack`."""
    return home / "build" / "dbt" / PARTIAL_PARSE


def prepared_parse_dir(home: Path) -> Path:
    """Where the parse at the run's start writes (outside `build/dbt/`, whose run folders a build
    prunes)."""
    return home / "build" / "dbt_parse"


@dataclass
class _PreparedParse:
    thread: threading.Thread
    # the parse's outcome once it ended: [whether it succeeded]
    ok: list[bool]


_prepared: dict[Path, _PreparedParse] = {}
_lock = threading.Lock()


def prepare_home_parse(
    home: Path, cfg: Config, dbt: DbtCliResource | None, env: dict[str, str]
) -> bool:
    """Start `dbt parse` for `home` in the background when the home has no parse cache yet and
    cannot start from the project's (`seed_home_parse`); whether it started. `env`: the
    profile's environment variables as the build sets them (FLEETLEDGER_HOME,
    `shared_profile_env`). Call from the main thread before the run."""
    home = home.resolve()
    if dbt is None or home_parse_cache(home).exists():
        return False
    if seed_home_parse(home, cfg, Path(dbt.project_dir)):
        return False
    out = prepared_parse_dir(home)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    args = ["parse", "--vars", json.dumps(config_dbt_vars(cfg)), "--quiet"]
    # the child takes its environment when it starts, here, on the calling thread
    with environment(env), children_die_with_parent(dbt_cli_invocation):
        invocation = dbt.cli(args, target_path=out, raise_on_error=False)
    ok: list[bool] = []

    def wait() -> None:
        try:
            invocation.wait()
            ok.append(invocation.is_successful())
        except Exception:  # the build parses in full instead; it reports any real error
            ok.append(False)

    thread = threading.Thread(target=wait, name="dbt-parse", daemon=True)
    thread.start()
    with _lock:
        _prepared[home] = _PreparedParse(thread, ok)
    return True


def adopt_prepared_parse(home: Path, timeout: float = ADOPT_TIMEOUT_S) -> bool:
    """Wait for the parse `prepare_home_parse` started for `home` (if any) and make its cache
    the home's, unless the home has one already; whether it did."""
    home = home.resolve()
    with _lock:
        prepared = _prepared.pop(home, None)
    if prepared is None:
        return False
    prepared.thread.join(timeout)
    made = prepared_parse_dir(home) / PARTIAL_PARSE
    adopted = False
    if prepared.ok == [True] and made.is_file() and not home_parse_cache(home).exists():
        home_parse_cache(home).parent.mkdir(parents=True, exist_ok=True)
        made.replace(home_parse_cache(home))
        adopted = True
    if not prepared.thread.is_alive():
        shutil.rmtree(prepared_parse_dir(home), ignore_errors=True)
    return adopted


def discard_prepared_parse(home: Path, timeout: float = ADOPT_TIMEOUT_S) -> None:
    """After a run whose dbt step never adopted its parse (a failed ingest, a run without the
    build): wait for the parse and remove what it wrote."""
    home = home.resolve()
    with _lock:
        prepared = _prepared.pop(home, None)
    if prepared is None:
        return
    prepared.thread.join(timeout)
    shutil.rmtree(prepared_parse_dir(home), ignore_errors=True)
