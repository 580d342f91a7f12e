"""`sacct --parsable2 --allocations --duplicates` output → `slurm_jobs`, from files or from the
`sacct` command itself (`run_sacct`, one call per day window).

One row per allocation line: a requeued job printed twice by `--duplicates` is two rows (two
runs), an unstarted array range `123_[5-9%2]` is one row whose `array_task_ids` lists the tasks.
Steps (`123.batch`, `123.extern`, `123.0`) are folded into the allocation printed before them
(`step_count`, `max_rss_mib`); a step whose allocation is not in the output is counted in a
warning. Rows that break a rule (wrong field count, unparseable time, unknown state, ...) go to
quarantine with the reason; the reader never crashes on a bad row.

Options (`Source.options`):
- `delimiter`: field delimiter, default `|` (may be multi-byte, e.g. `☃`); a trailing delimiter
  (`--parsable`) is tolerated.
- `columns`: sacct field names of a headerless file (default: the 26-field Open XDMoD order).
  A file whose first field is `JobID` has a header, which wins.
- `timezone`: the zone sacct printed times in (default `UTC`); times are converted to UTC.
- `cluster`: overrides / fills the cluster column.
- `snapshot_date`: the day of the export window (default: a `YYYY-MM-DD` in the file name).
- `command: true` (or location `sacct://`): run `sacct` once per requested UTC day instead of
  reading files; `sacct` (the executable, default `sacct` on PATH), `args` (replaces the default
  arguments; `{start}` / `{end}` are substituted, else `--starttime`/`--endtime` are appended),
  `extra_args` (appended to the defaults), `timeout_s` (default 600). See `sacct_command`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from ingest.core.common import ReadResult, quarantine_frame, read_bytes
from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema

TABLE = "slurm_jobs"

DEFAULT_COLUMNS = (
    "jobid,jobidraw,cluster,partition,qos,account,group,gid,user,uid,submit,eligible,start,end,"
    "elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqtres,alloctres,timelimit,nodelist,"
    "jobname"
).split(",")

STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "COMPLETING",
        "CONFIGURING",
        "DEADLINE",
        "FAILED",
        "LAUNCH_FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PENDING",
        "POWER_UP_NODE",
        "PREEMPTED",
        "RECONFIG_FAIL",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "RESV_DEL_HOLD",
        "REVOKED",
        "RUNNING",
        "SIGNALING",
        "SPECIAL_EXIT",
        "STAGE_OUT",
        "STOPPED",
        "SUSPENDED",
        "TIMEOUT",
        "UPDATE_DB",
    }
)

_NULL_TIMES = frozenset({"", "Unknown", "None", "N/A"})
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_ELAPSED = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?$")
_EXIT = re.compile(r"^(-?\d+):(-?\d+)$")
_ARRAY_TASK = re.compile(r"^(\d+)_(\d+)$")
_ARRAY_PENDING = re.compile(r"^(\d+)_\[([^\]]*)\]$")
_HET = re.compile(r"^(\d+)\+(\d+)$")
_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([cn]?)$", re.IGNORECASE)
_MIB_PER_UNIT = {"K": 1 / 1024, "M": 1.0, "": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_PLAIN = re.compile(r"^\d+$")
_DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")
_GRES_GPU = re.compile(r"^gpu(?::([^:(]+))?:(\d+)(?:\(.*\))?$")
_NO_NODES = frozenset({"", "None assigned", "(null)"})


# --------------------------------------------------------------------------- field parsers


def parse_elapsed(text: str) -> int:
    """`[D-][HH:]MM:SS[.fff]` → seconds. Raises ValueError."""
    m = _ELAPSED.match(text.strip())
    if not m:
        raise ValueError(f"unparseable elapsed {text!r}")
    days, hours, minutes, seconds = m.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)


def parse_memory(text: str) -> tuple[float, str | None]:
    """A Slurm memory size → (MiB, per): `3000Mc` → (3000.0, 'cpu'), `48000Mn` → (48000.0,
    'node'), `199G` → (203776.0, None), `80K` → (0.078125, None). No unit means MiB. Raises
    ValueError."""
    m = _MEM.match(text.strip())
    if not m:
        raise ValueError(f"unparseable memory size {text!r}")
    number, unit, per = m.groups()
    mib = float(number) * _MIB_PER_UNIT[unit.upper()]
    return mib, {"c": "cpu", "n": "node"}.get(per.lower())


def mem_from_tres(tres: str) -> float | None:
    """MiB of the `mem=` entry of a TRES string (`mem=374000M`, `mem=125G`), None without one."""
    for item in tres.split(","):
        key, _, value = item.strip().partition("=")
        if key == "mem":
            return parse_memory(value)[0]
    return None


def parse_timelimit(text: str) -> int | None:
    """`Timelimit` → seconds; `UNLIMITED`, `Partition_Limit`, `INVALID` and empty → None."""
    text = text.strip()
    if not text or not _ELAPSED.match(text):
        return None
    return parse_elapsed(text)


def gpus_from_tres(tres: str) -> int | None:
    """GPU count of a TRES string; `gres/gpu=N` and `gres/gpu:type=N` count once (typed
    entries are summed when there is no untyped one). None when it names no GPU."""
    untyped: int | None = None
    typed = 0
    has_typed = False
    for item in tres.split(","):
        key, _, value = item.strip().partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        try:
            n = int(value)
        except ValueError:
            continue
        if key == "gres/gpu":
            untyped = n
        else:
            typed += n
            has_typed = True
    if untyped is not None:
        return untyped
    return typed if has_typed else None


def gpus_from_gres(gres: str) -> int | None:
    """GPU count of an old-style GRES string like `gpu:P100:2(IDX:1,3),hbm:0`."""
    total: int | None = None
    for item in _split_top(gres, ","):
        m = _GRES_GPU.match(item.strip())
        if m:
            total = (total or 0) + int(m.group(2))
    return total


_GRES_IDX = re.compile(r"^gpu(?::[^:(]+)?:\d+\(IDX:([^)]*)\)$")


def gpu_indices_from_gres(gres: str) -> list[int] | None:
    """GPU indices an old-style GRES string names: `gpu:P100:2(IDX:1,3)` -> [1, 3],
    `gpu:2(IDX:0-1)` -> [0, 1]; None when it names none (`IDX:N/A`, no IDX)."""
    out: list[int] = []
    for item in _split_top(gres, ","):
        m = _GRES_IDX.match(item.strip())
        if not m or m.group(1).strip() in ("", "N/A"):
            continue
        for part in m.group(1).split(","):
            lo, _, hi = part.strip().partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                return None
            out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(out)) or None


def _split_top(text: str, sep: str) -> list[str]:
    """Split at `sep` outside brackets and parentheses."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _expand_ranges(spec: str) -> list[str]:
    out = []
    # an array range may carry a throttle: `[1-1000%20]` (at most 20 tasks at once)
    spec = re.sub(r"%\d+$", "", spec.strip())
    for part in spec.split(","):
        part = part.strip()
        if not part:
            raise ValueError("empty range")
        lo, dash, hi = part.partition("-")
        if not dash:
            if not lo.isdigit():
                raise ValueError(f"bad range {part!r}")
            out.append(lo)
            continue
        if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
            raise ValueError(f"bad range {part!r}")
        width = len(lo)
        out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
    return out


def _expand_one(pattern: str) -> list[str]:
    start = pattern.find("[")
    if start < 0:
        if "]" in pattern:
            raise ValueError(f"unbalanced brackets in {pattern!r}")
        return [pattern]
    end = pattern.find("]", start)
    if end < 0:
        raise ValueError(f"unbalanced brackets in {pattern!r}")
    prefix, spec, rest = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    tails = _expand_one(rest)
    return [prefix + n + t for n in _expand_ranges(spec) for t in tails]


def expand_hostlist(nodelist: str) -> list[str]:
    """Expand a Slurm hostlist: `gpu-a[01-03,07],gpu-b1` → gpu-a01, gpu-a02, gpu-a03, gpu-a07,
    gpu-b1. `None assigned` → []. Raises ValueError on malformed input."""
    nodelist = nodelist.strip()
    if nodelist in _NO_NODES:
        return []
    hosts: list[str] = []
    for part in _split_top(nodelist, ","):
        part = part.strip()
        if part:
            hosts.extend(_expand_one(part))
    return hosts


def _array_ids(job_id: str) -> tuple[str | None, int | None, list[int] | None]:
    """(array job id, task id of a started task, the task ids the row stands for)."""
    m = _ARRAY_TASK.match(job_id)
    if m:
        return m.group(1), int(m.group(2)), [int(m.group(2))]
    m = _ARRAY_PENDING.match(job_id)
    if m:
        try:
            tasks = [int(i) for i in _expand_ranges(m.group(2))]
        except ValueError as err:
            raise _RowError(f"unparseable array range in JobID {job_id!r}: {err}") from None
        return m.group(1), None, tasks
    return None, None, None


# --------------------------------------------------------------------------- reader


def _zone(name: str) -> ZoneInfo | None:
    if name.upper() == "UTC":
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise IngestError(f"option timezone: unknown time zone {name!r}") from None


def _snapshot_date(path: Path, options: dict[str, Any], given: date | None) -> date | None:
    if given is not None:
        return given
    opt = options.get("snapshot_date")
    if opt is not None:
        return opt if isinstance(opt, date) else date.fromisoformat(str(opt))
    m = _DATE_IN_NAME.search(path.name)
    if m:
        try:
            return date.fromisoformat(m.group(1))
        except ValueError:
            return None
    return None


class _RowError(ValueError):
    pass


def _time(value: str, field: str, tz: ZoneInfo | None) -> datetime | None:
    value = value.strip()
    if value in _NULL_TIMES:
        return None
    if not _TIME.match(value):
        raise _RowError(f"unparseable time in {field}: {value!r}")
    dt = datetime.fromisoformat(value)
    if tz is None:
        return dt.replace(tzinfo=UTC)
    return dt.replace(tzinfo=tz).astimezone(UTC)


def _int(value: str, field: str) -> int | None:
    value = value.strip()
    if value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise _RowError(f"{field} is not an integer: {value!r}") from None


_OUT_COLUMNS = [
    "cluster",
    "job_id",
    "job_id_raw",
    "array_job_id",
    "array_task_id",
    "partition",
    "qos",
    "account",
    "group_name",
    "user_name",
    "submit",
    "eligible",
    "start",
    "end",
    "elapsed_seconds",
    "exit_code",
    "exit_signal",
    "state",
    "cancelled_by",
    "nnodes",
    "ncpus",
    "gpus",
    "alloc_tres",
    "req_tres",
    "timelimit",
    "nodelist",
    "hosts",
    "job_name",
    "het_job_id",
    "het_job_offset",
    "array_task_ids",
    "gid",
    "uid",
    "req_cpus",
    "req_mem",
    "req_mem_mib",
    "req_mem_per",
    "alloc_mem_mib",
    "timelimit_seconds",
    "step_count",
    "max_rss_mib",
    "gpu_indices",
]


def _row(f: dict[str, str], tz: ZoneInfo | None, cluster: str | None) -> list[Any]:
    def text(name: str) -> str | None:
        v = f.get(name)
        if v is None:
            return None
        v = v.strip()
        return v if v != "" else None

    job_id = (f.get("jobid") or "").strip()
    if not job_id:
        raise _RowError("empty JobID")
    array_job_id, array_task_id, array_task_ids = _array_ids(job_id)
    het = _HET.match(job_id)
    job_id_raw = text("jobidraw")
    if job_id_raw is None and "jobidraw" not in f and _PLAIN.match(job_id):
        job_id_raw = job_id

    state_text = (f.get("state") or "").strip()
    if not state_text:
        raise _RowError("empty State")
    words = state_text.split()
    state = words[0].rstrip("+")
    if state not in STATES:
        raise _RowError(f"unknown state {state_text!r}")
    cancelled_by = None
    if len(words) >= 3 and words[1] == "by":
        cancelled_by = _int(words[2], "State (CANCELLED by)")

    elapsed = None
    if (e := text("elapsed")) is not None:
        try:
            elapsed = parse_elapsed(e)
        except ValueError as err:
            raise _RowError(str(err)) from None

    exit_code = exit_signal = None
    if (x := text("exitcode")) is not None:
        m = _EXIT.match(x)
        if not m:
            raise _RowError(f"unparseable ExitCode {x!r}")
        exit_code, exit_signal = int(m.group(1)), int(m.group(2))

    alloc_tres = text("alloctres")
    req_tres = text("reqtres")
    gpus: int | None = None
    if alloc_tres is not None:
        gpus = gpus_from_tres(alloc_tres)
    elif req_tres is not None:
        gpus = gpus_from_tres(req_tres)
    if gpus is None:
        for col in ("allocgres", "reqgres", "gres"):
            g = text(col)
            if g is not None:
                gpus = gpus_from_gres(g)
                if gpus is not None:
                    break
    gpu_indices: list[int] | None = None
    for col in ("allocgres", "reqgres", "gres"):
        g = text(col)
        if g is not None and gpu_indices is None:
            gpu_indices = gpu_indices_from_gres(g)

    nodelist = text("nodelist")
    try:
        hosts = expand_hostlist(nodelist) if nodelist is not None else []
    except ValueError as err:
        raise _RowError(f"unparseable NodeList {nodelist!r}: {err}") from None

    req_mem = text("reqmem")
    req_mem_mib = req_mem_per = alloc_mem_mib = None
    try:
        if req_mem is not None:
            req_mem_mib, req_mem_per = parse_memory(req_mem)
        if alloc_tres is not None:
            alloc_mem_mib = mem_from_tres(alloc_tres)
    except ValueError as err:
        raise _RowError(str(err)) from None
    timelimit = text("timelimit")

    return [
        cluster if cluster is not None else text("cluster"),
        job_id,
        job_id_raw,
        array_job_id,
        array_task_id,
        text("partition"),
        text("qos"),
        text("account"),
        text("group"),
        text("user"),
        _time(f.get("submit", ""), "Submit", tz),
        _time(f.get("eligible", ""), "Eligible", tz),
        _time(f.get("start", ""), "Start", tz),
        _time(f.get("end", ""), "End", tz),
        elapsed,
        exit_code,
        exit_signal,
        state,
        cancelled_by,
        _int(f.get("nnodes", ""), "NNodes"),
        _int(f.get("ncpus", ""), "NCPUS"),
        gpus if gpus is not None else 0,
        alloc_tres,
        req_tres,
        timelimit,
        nodelist,
        hosts,
        text("jobname"),
        het.group(1) if het else None,
        int(het.group(2)) if het else None,
        array_task_ids,
        _int(f.get("gid", ""), "GID"),
        _int(f.get("uid", ""), "UID"),
        _int(f.get("reqcpus", ""), "ReqCPUS"),
        req_mem,
        req_mem_mib,
        req_mem_per,
        alloc_mem_mib,
        parse_timelimit(timelimit) if timelimit is not None else None,
        0,
        None,
        gpu_indices,
    ]


def parse_sacct(
    text: str,
    *,
    source: str,
    file: str,
    options: dict[str, Any] | None = None,
    snapshot_date: date | None = None,
) -> ReadResult:
    """Parse sacct output already decoded to text (see `read_sacct`)."""
    options = options or {}
    delim = str(options.get("delimiter", "|"))
    if not delim:
        raise IngestError("option delimiter: must not be empty", file=file)
    columns = [c.strip().lower() for c in options.get("columns", DEFAULT_COLUMNS)]
    tz = _zone(str(options.get("timezone", "UTC")))
    cluster = options.get("cluster")
    cluster = str(cluster) if cluster is not None else None

    out: list[list[Any]] = []
    line_numbers: list[int] = []
    q_lines: list[int] = []
    q_reasons: list[str] = []
    q_raws: list[str] = []
    header_seen = False
    steps = 0
    orphan_steps = 0
    # the allocation a step belongs to: the last allocation row with that JobID printed
    # before it (a requeued job's attempts share the JobID; sacct prints each attempt's steps
    # after it)
    latest: dict[str, int] = {}
    i_steps = _OUT_COLUMNS.index("step_count")
    i_rss = _OUT_COLUMNS.index("max_rss_mib")
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split(delim)
        if fields[0].strip().lower() == "jobid":
            # a header line (possibly repeated where outputs were concatenated)
            names = [c.strip().lower() for c in fields]
            if names and names[-1] == "" and len(names) > 1:
                names = names[:-1]
            if not header_seen:
                columns = names
                header_seen = True
            continue
        if len(fields) == len(columns) + 1 and fields[-1] == "":
            fields = fields[:-1]  # --parsable: trailing delimiter
        if len(fields) != len(columns):
            q_lines.append(lineno)
            q_reasons.append(f"expected {len(columns)} fields, found {len(fields)}")
            q_raws.append(line)
            continue
        rec = dict(zip(columns, fields, strict=True))
        job_id = rec.get("jobid", "").strip()
        if "." in job_id:
            steps += 1
            owner = latest.get(job_id.split(".", 1)[0])
            if owner is None:
                orphan_steps += 1
                continue
            row = out[owner]
            row[i_steps] += 1
            rss = (rec.get("maxrss") or "").strip()
            if rss:
                try:
                    mib = parse_memory(rss)[0]
                except ValueError:
                    mib = None
                if mib is not None and (row[i_rss] is None or mib > row[i_rss]):
                    row[i_rss] = mib
            continue
        try:
            out.append(_row(rec, tz, cluster))
            line_numbers.append(lineno)
            latest[job_id] = len(out) - 1
        except _RowError as err:
            q_lines.append(lineno)
            q_reasons.append(str(err))
            q_raws.append(line)

    schema = polars_schema(TABLE)
    data = {name: [r[i] for r in out] for i, name in enumerate(_OUT_COLUMNS)}
    rows = pl.DataFrame(
        {
            **data,
            "x_snapshot_date": [snapshot_date] * len(out),
            "x_source": [source] * len(out),
            "x_source_file": [file] * len(out),
            "x_line_number": line_numbers,
        },
        schema=schema,
    )
    quarantine = quarantine_frame(source, file, q_lines, q_reasons, q_raws)
    if not out and not steps and q_reasons and all(r.startswith("expected ") for r in q_reasons):
        # not one line has the declared layout: the file is not this sacct format at all
        raise IngestError(
            f"{q_reasons[0]} (delimiter {delim!r}, {len(columns)} columns); "
            "check the source's delimiter/columns options",
            file=file,
            line=q_lines[0],
        )
    warnings = []
    if orphan_steps:
        warnings.append(
            f"{file}: {orphan_steps} step lines follow no landed allocation line of their job "
            "(they are not landed)"
        )
    if out == [] and q_lines:
        warnings.append(f"{file}: every row of the file was rejected ({len(q_lines)} rows)")
    return ReadResult(rows, quarantine, warnings=warnings, files=[file])


def read_sacct(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | None = None,
    snapshot_date: date | None = None,
) -> ReadResult:
    """Read one sacct `--parsable2` / `--parsable` output file (plain or gzip) into
    `slurm_jobs` rows and a quarantine frame. Bytes that are not UTF-8 are replaced."""
    path = Path(path)
    options = options or {}
    text = read_bytes(path).decode("utf-8", errors="replace")
    return parse_sacct(
        text,
        source=source,
        file=str(path),
        options=options,
        snapshot_date=_snapshot_date(path, options, snapshot_date),
    )


# --------------------------------------------------------------------------- sacct command

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
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", errors="replace").strip()[-500:]
        raise IngestError(f"{shown}: exited with status {proc.returncode}: {detail}")
    options["timezone"] = "UTC"
    return parse_sacct(
        proc.stdout.decode("utf-8", errors="replace"),
        source=source,
        file=shown,
        options=options,
        snapshot_date=day,
    )
