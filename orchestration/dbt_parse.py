"""A home's first build: dbt parses the project while the run starts.

dbt keeps a parse cache (`partial_parse.msgpack`) and re-parses only the files that changed
since, but only when the cache was made with the same profile and vars: the profile's warehouse
path is the home's, so the project's own cache (parsed for another home) is of no use to a new
home, and its first build parsed every file inside the dbt step: about 4.4 s of one CPU at the
start of the build of the scale benchmark's target, with the other CPU idle
(docs/performance.md). A later build of the home reuses the cache its last build left in
`build/dbt/` (orchestration/dbt.py, `keep_partial_parse`).

So `fleetledger run` of a home without that cache starts `dbt parse`, with the build's vars,
target and profile environment, as a child process before it loads the definitions, on the CPU
that loading them and starting the run leave idle (`prepare_home_parse`); the dbt step waits for
it and adopts its cache (`adopt_prepared_parse`) before it builds. The build still checks every
file against the cache and re-parses what differs; a parse that failed or did not finish leaves
no cache, and the build parses in full, as before. A run Dagster launched itself starts no such
parse."""

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
from fleetledger.env_vars import environment

PARTIAL_PARSE = "partial_parse.msgpack"
# how long the dbt step waits for a parse still running (a parse takes seconds)
ADOPT_TIMEOUT_S = 120.0


def config_dbt_vars(cfg: Config | None) -> dict[str, Any]:
    """The config's `health:` and `economics:` settings as dbt vars (the defaults without a
    config). They stay the same from run to run, so dbt's parse cache stays valid; what differs
    per run reaches the models as environment variables."""
    if cfg is None:
        return {**HealthSettings().dbt_vars(), **EconomicsSettings().dbt_vars()}
    return {**cfg.health.dbt_vars(), **cfg.economics.dbt_vars()}


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
    """Start `dbt parse` for `home` in the background when the home has no parse cache yet;
    whether it started. `env`: the profile's environment variables as the build sets them
    (FLEETLEDGER_HOME, the warehouse settings). Call from the main thread before the run."""
    home = home.resolve()
    if dbt is None or home_parse_cache(home).exists():
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
