"""`sacct --parsable2 --allocations --duplicates` output → `slurm_jobs`, from files or from the
`sacct` command itself (`ingest/scheduler/slurm_command.py`, one call per day window).

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
- `encoding`: the file's text encoding (default UTF-8; a line with bytes that are not UTF-8 is
  quarantined, the bytes shown escaped).
- `timezone`: the zone sacct printed times in (default `UTC`); times are converted to UTC.
- `cluster`: overrides / fills the cluster column.
- `snapshot_date`: the day of the export window (default: a `YYYY-MM-DD` in the file name).
- `snapshot_at`: when the export was taken (ISO time). A Submit, Start (of a job that is not
  PENDING) or End later than it (without the option: later than now; for the command: than
  when it ran), plus a few minutes of clock skew, is quarantined with the field and value, as is
  an End before its Start or a Start before its Submit (`Unknown` / `None` times of running
  and pending jobs are not checked).
- `max_run_hours`: quarantine allocations that ran longer (End, or now while running, minus
  Start); off by default, since services run for months.
- `command: true` (or location `sacct://`): run `sacct` once per requested UTC day instead of
  reading files; `sacct` (the executable, default `sacct` on PATH), `args` (replaces the default
  arguments; `{start}` / `{end}` are substituted, else `--starttime`/`--endtime` are appended),
  `extra_args` (appended to the defaults), `timeout_s` (default 600). See `sacct_command`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl

from ingest.core.common import ReadResult, quarantine_frame, to_utc_datetime
from ingest.core.errors import IngestError
from ingest.core.findings import IngestFinding, Warning_
from ingest.core.landing import polars_schema
from ingest.core.text import encoding_option, read_text
from ingest.scheduler.slurm_fields import (
    _DATE_IN_NAME,
    _EXIT,
    _HET,
    _PLAIN,
    DEFAULT_COLUMNS,
    STATES,
    TABLE,
    _array_ids,
    _RowError,
    _zone,
    expand_hostlist,
    gpu_indices_from_gres,
    mem_from_tres,
    parse_elapsed,
    parse_memory,
    parse_timelimit,
)
from ingest.scheduler.slurm_gres import GpuRequest, gpu_request_from_gres, gpu_request_from_tres
from ingest.scheduler.slurm_local_time import LocalTimeNotes, resolve_times
from ingest.scheduler.time_rules import (
    CLOCK_SKEW,
    check_max_run,
    check_not_future,
    check_order,
    latest_allowed,
    max_hours_option,
)


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
    "mig_instances",
    "mig_slices",
    "mig_profile",
]


@dataclass(frozen=True)
class _TimeLimits:
    """What a row's times are checked against: the latest time allowed, what it is (for the
    reason), and the longest run allowed (`max_run_hours`, None: no limit)."""

    latest: datetime
    what: str
    max_hours: float | None


def _gpu_request(text: Any) -> GpuRequest | None:
    """AllocTRES, else ReqTRES, else the first GRES column that names GPUs."""
    for col, parse in (("alloctres", gpu_request_from_tres), ("reqtres", gpu_request_from_tres)):
        if (t := text(col)) is not None:
            return parse(t)
    for col in ("allocgres", "reqgres", "gres"):
        if (g := text(col)) is not None and (req := gpu_request_from_gres(g)) is not None:
            return req
    return None


def _row(
    f: dict[str, str],
    tz: ZoneInfo | None,
    cluster: str | None,
    limits: _TimeLimits,
    notes: LocalTimeNotes,
    where: str,
) -> list[Any]:
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
    request = _gpu_request(text) or GpuRequest(0)
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

    times = resolve_times(f, tz, elapsed, notes, where)
    submit, start, end = times["Submit"], times["Start"], times["End"]
    # a pending job's Start may be the scheduler's estimate; Eligible may be a future --begin
    future = [("Submit", submit), ("Start", start if state != "PENDING" else None), ("End", end)]
    check_not_future(future, limits.latest, limits.what, _RowError)
    check_order([("Submit", submit), ("Start", start), ("End", end)], _RowError)
    check_max_run(start, end, limits.latest - CLOCK_SKEW, limits.max_hours, _RowError)

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
        submit,
        times["Eligible"],
        start,
        end,
        elapsed,
        exit_code,
        exit_signal,
        state,
        cancelled_by,
        _int(f.get("nnodes", ""), "NNodes"),
        _int(f.get("ncpus", ""), "NCPUS"),
        request.whole,
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
        request.mig_instances,
        request.mig_slices,
        request.mig_profile,
    ]


def _time_limits(options: dict[str, Any], taken_at: datetime | None) -> _TimeLimits:
    if options.get("snapshot_at") is not None:
        taken_at = to_utc_datetime(options["snapshot_at"], "snapshot_at")
    what = "the export's snapshot time" if taken_at is not None else "now (ingest time)"
    now = datetime.now(UTC)
    return _TimeLimits(
        latest_allowed(taken_at, now), what, max_hours_option(options, "max_run_hours")
    )


def parse_sacct(
    text: str,
    *,
    source: str,
    file: str,
    options: dict[str, Any] | None = None,
    snapshot_date: date | None = None,
    taken_at: datetime | None = None,
    exported_at: datetime | None = None,
    bad_lines: Mapping[int, str] | None = None,
) -> ReadResult:
    """Parse sacct output already decoded to text (see `read_sacct`). `taken_at`: when the
    export was made, if known (the command's run; else option `snapshot_at`, else now).
    `exported_at`: when this export was written, to order it among other undated exports of
    the same jobs (`x_exported_at`: `taken_at` when given, else this: the file's mtime).
    `bad_lines`: lines that are not valid text (`ingest.core.text`), quarantined."""
    options = options or {}
    delim = str(options.get("delimiter", "|"))
    if not delim:
        raise IngestError("option delimiter: must not be empty", file=file)
    columns = [c.strip().lower() for c in options.get("columns", DEFAULT_COLUMNS)]
    tz = _zone(str(options.get("timezone", "UTC")))
    cluster = options.get("cluster")
    cluster = str(cluster) if cluster is not None else None
    limits = _time_limits(options, taken_at)
    if taken_at is not None:
        exported_at = taken_at
    notes = LocalTimeNotes()

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
        if bad_lines and lineno in bad_lines:
            q_lines.append(lineno)
            q_reasons.append(bad_lines[lineno])
            q_raws.append(line)
            continue
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
            out.append(_row(rec, tz, cluster, limits, notes, f"line {lineno}"))
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
            "x_exported_at": [exported_at] * len(out),
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
    warnings: list[Warning_] = []
    if orphan_steps:
        # a step line only adds to its allocation's step count: no GPU-hours are lost with it
        warnings.append(
            IngestFinding(
                "step_lines_without_allocation",
                f"{file}: {orphan_steps} step lines follow no landed allocation line of their "
                "job (they are not landed)",
                "warning",
                count=orphan_steps,
            )
        )
    if out == [] and q_lines:
        # the rows are in the quarantine, counted there as data_loss
        warnings.append(
            IngestFinding(
                "file_wholly_rejected",
                f"{file}: every row of the file was rejected ({len(q_lines)} rows)",
                "warning",
                count=len(q_lines),
            )
        )
    warnings.extend(_local_time_findings(notes, file, str(options.get("timezone", "UTC"))))
    return ReadResult(rows, quarantine, warnings=warnings, files=[file])


def _local_time_findings(notes: LocalTimeNotes, file: str, zone: str) -> list[IngestFinding]:
    """The findings of a file's daylight-saving local times (ingest/scheduler/slurm_local_time)."""
    examples = "; ".join(notes.examples)
    out = []
    if notes.by_elapsed:
        out.append(
            IngestFinding(
                "slurm_ambiguous_time_resolved",
                f"{file}: {notes.by_elapsed} rows have a Start or End in the hour repeated when "
                f"{zone} clocks went back; each reading was chosen so End - Start = Elapsed "
                f"(e.g. {examples})",
                "info",
                count=notes.by_elapsed,
            )
        )
    if notes.first_reading:
        out.append(
            IngestFinding(
                "slurm_ambiguous_time_guessed",
                f"{file}: {notes.first_reading} times in the hour repeated when {zone} clocks "
                "went back could not be resolved (no Elapsed, or no Start to compare with) and "
                f"were read as the first of their two readings (e.g. {examples})",
                "warning",
                count=notes.first_reading,
            )
        )
    if notes.nonexistent:
        out.append(
            IngestFinding(
                "slurm_nonexistent_time",
                f"{file}: {notes.nonexistent} times fall in the hour skipped when {zone} clocks "
                "went forward; they were read with the offset before the change, as the zone "
                f"library does (02:30 is read as 03:30 after the change) (e.g. {examples})",
                "info",
                count=notes.nonexistent,
            )
        )
    return out


def read_sacct(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | None = None,
    snapshot_date: date | None = None,
) -> ReadResult:
    """Read one sacct `--parsable2` / `--parsable` output file (plain or gzip) into
    `slurm_jobs` rows and a quarantine frame. A line with bytes that are not UTF-8 is
    quarantined with the bytes escaped, unless option `encoding` names the file's encoding."""
    path = Path(path)
    options = options or {}
    decoded = read_text(path, encoding_option(options))
    return parse_sacct(
        decoded.text,
        bad_lines=decoded.bad_lines,
        source=source,
        file=str(path),
        options=options,
        snapshot_date=_snapshot_date(path, options, snapshot_date),
        exported_at=datetime.fromtimestamp(path.stat().st_mtime, UTC),
    )
