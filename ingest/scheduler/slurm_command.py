"""Run `sacct` itself for a slurm source (option `command: true` or location `sacct://`): one
call per requested UTC day window, parsed like a file (`parse_sacct`)."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.core.text import decode_text, encoding_option
from ingest.scheduler.slurm import parse_sacct
from ingest.scheduler.slurm_fields import DEFAULT_COLUMNS

#: what `sacct_command` runs by default (the window is appended)
DEFAULT_SACCT_ARGS = (
    "--parsable2",
    "--allusers",
    "--allocations",
    "--duplicates",
    "--format",
    ",".join(DEFAULT_COLUMNS),
)


def sacct_window(day: date) -> tuple[str, str]:
    """The `--starttime` / `--endtime` values of a UTC day: `D T00:00:00` to `D+1 T00:00:00`."""
    start = datetime.combine(day, time())
    return (start.isoformat(timespec="seconds"), (start + timedelta(days=1)).isoformat())


def _str_list(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, Sequence) and all(isinstance(v, str | int | float) for v in value):
        return [str(v) for v in value]
    raise IngestError(f"option {what}: expected a list of strings, got {value!r}")


def sacct_command(day: date, options: dict[str, Any] | None = None) -> list[str]:
    """The command line that exports the allocations of one UTC day window.

    Default: `sacct --parsable2 --allusers --allocations --duplicates --format <the 26 Open
    XDMoD fields> --starttime D --endtime D+1` (run with TZ=UTC, see `run_sacct`). Option
    `args` replaces everything after the executable: `{start}` / `{end}` in it are substituted,
    and when neither appears the window is appended. `extra_args` (e.g. `--clusters=gpu`) go
    after the default arguments. `sacct` names the executable."""
    options = options or {}
    start, end = sacct_window(day)
    exe = str(options.get("sacct", "sacct"))
    if options.get("args") is not None:
        args = _str_list(options["args"], "args")
        if any("{start}" in a or "{end}" in a for a in args):
            return [exe, *(a.replace("{start}", start).replace("{end}", end) for a in args)]
    else:
        args = [*DEFAULT_SACCT_ARGS, *_str_list(options.get("extra_args", []), "extra_args")]
    return [exe, *args, "--starttime", start, "--endtime", end]


def is_command_source(location: str, options: dict[str, Any]) -> bool:
    """Whether a slurm source runs `sacct` (option `command: true` or location `sacct://`)."""
    return bool(options.get("command")) or location.startswith("sacct://")


def run_sacct(day: date, *, source: str, options: dict[str, Any] | None = None) -> ReadResult:
    """Run `sacct` once for the UTC day window of `day` and parse its output (times in UTC:
    the command runs with TZ=UTC, whatever option `timezone` says). `x_source_file` is the
    command line. Raises IngestError when sacct cannot run, fails or times out."""
    options = dict(options or {})
    cmd = sacct_command(day, options)
    shown = shlex.join(cmd)
    timeout = float(options.get("timeout_s", 600))
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            env={**os.environ, "TZ": "UTC"},
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise IngestError(f"sacct executable not found: {cmd[0]!r} (option sacct)") from None
    except subprocess.TimeoutExpired:
        raise IngestError(f"{shown}: timed out after {timeout:g} s (option timeout_s)") from None
    except OSError as err:
        raise IngestError(f"{shown}: cannot run: {err}") from None
    ran_at = datetime.now(UTC)  # the output holds nothing later than this
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", errors="backslashreplace").strip()[-500:]
        raise IngestError(f"{shown}: exited with status {proc.returncode}: {detail}")
    options["timezone"] = "UTC"
    decoded = decode_text(proc.stdout, shown, encoding_option(options))
    return parse_sacct(
        decoded.text,
        bad_lines=decoded.bad_lines,
        source=source,
        file=shown,
        options=options,
        snapshot_date=day,
        taken_at=ran_at,
    )
