"""Job log files → checkpoint markers (`run_log_checkpoints`): when did each job last save its
work? One row per marker line; fct_run_costs charges a failed run only for the time since its
last checkpoint (docs/metrics.md, `lost_work_cost`).

A file belongs to one job, named by its path (`job_from_path`): Slurm's `slurm-%j.out`
(`%j` = JobIDRaw; array tasks written as `slurm-%A_%a.out` are matched by array id and task),
or Kubernetes logs saved with `kubectl logs --timestamps <pod> > <namespace>/<pod>.log`.
A requeued Slurm job appends every attempt to the same file: the warehouse tells the attempts
apart by their windows, so a marker of attempt 1 never counts for attempt 2.

Options (`Source.options`, validated by `RunLogOptions.parse`):
- `scheduler` (required): `slurm` | `kubernetes`; `cluster` (required): the cluster name of the
  runs, as the `slurm` / `kubernetes` source of the same cluster writes it.
- `job_from_path`: a regex searched in the file's path (`/` separators) with named groups:
  Slurm `job_id_raw`, or `array_job_id` and `array_task_id`; Kubernetes `namespace` and `pod`.
  Defaults: `DEFAULT_JOB_FROM_PATH`.
- `marker`: a regex of a checkpoint line (`DEFAULT_MARKER`: Hugging Face Trainer, PyTorch
  Lightning, DeepSpeed, Megatron and plain "checkpoint saved" messages, any case). A user
  pattern is used as written (add `(?i)` for any case).
- `timestamp`: a regex, or a list tried in order, with a group `ts` that finds the time of a
  marker line. Default Slurm: an ISO-like time anywhere in the line (`YYYY-MM-DD[ T]HH:MM:SS`,
  optional `.ffffff` or Python logging's `,mmm`, optional `Z` / `UTC` / `±HH:MM`), or Hugging
  Face's `MM/DD/YYYY HH:MM:SS`; Kubernetes: the RFC3339Nano prefix `kubectl logs --timestamps`
  writes, then the same as Slurm.
- `timestamp_format`: a strptime format for the `ts` text (default: the forms above).
- `timezone`: the zone of times without an offset (default `UTC`); ambiguous local times (the
  hour repeated when clocks go back) are taken as the first of the two.

Bad input: a marker line with no time the `timestamp` patterns find, a time that is not a
date, or bytes that are not UTF-8 (shown escaped), goes to quarantine (file, line, reason)
and the rest of the file is read (bytes in other lines are the job's own output, not data).
Marker lines of a file whose path matches no job pattern go to quarantine too (the job is
unknown; the file's other lines are not rows), and the file is named in a warning. A file that
cannot be read fails with IngestError naming it.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.core.landing import QUARANTINE_TABLE, polars_schema

TABLE = "run_log_checkpoints"
SCHEDULERS = ("slurm", "kubernetes")
#: column of the quarantine frame this reader adds: the UTC day a rejected marker belongs to,
#: when its time is known (the registry files it there, then drops the column)
PARTITION_DAY = "x_partition_day"
MESSAGE_CHARS = 1000
UNMATCHED_WARNING = "path matches no job (option job_from_path)"

DEFAULT_JOB_FROM_PATH = {
    "slurm": (
        r"slurm-(?:(?P<array_job_id>\d+)_(?P<array_task_id>\d+)|(?P<job_id_raw>\d+))"
        r"\.out(?:\.gz)?$"
    ),
    "kubernetes": r"(?P<namespace>[^/]+)/(?P<pod>[^/]+)\.log(?:\.gz)?$",
}
DEFAULT_MARKER = (
    r"(?i)saving model checkpoint to"  # HF Trainer
    r"|saving model to\s"  # PyTorch Lightning ModelCheckpoint (verbose)
    r"|saved (?:model )?checkpoint"  # "Saved checkpoint", Megatron "successfully saved checkpoint"
    r"|checkpoint (?:was )?saved"
    r"|checkpoint \S+ is ready now"  # DeepSpeed
)
_ISO_TS = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:\s?(?:Z|UTC)\b|[+-]\d{2}:?\d{2}\b)?"
)
_US_TS = r"\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}"
GENERIC_TIMESTAMP = rf"(?P<ts>{_ISO_TS}|{_US_TS})"
KUBECTL_TIMESTAMP = r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))\s"
DEFAULT_TIMESTAMP = {
    "slurm": (GENERIC_TIMESTAMP,),
    "kubernetes": (KUBECTL_TIMESTAMP, GENERIC_TIMESTAMP),
}
OPTIONS = (
    "scheduler",
    "cluster",
    "job_from_path",
    "marker",
    "timestamp",
    "timestamp_format",
    "timezone",
)
_PARSE_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
    r"\s?(Z|UTC|[+-]\d{2}:?\d{2})?$"
)
_US_FORMAT = "%m/%d/%Y %H:%M:%S"


class _LineError(ValueError):
    pass


def _regex(value: Any, option: str, source: str) -> re.Pattern[str]:
    if not isinstance(value, str) or not value:
        raise IngestError(f"source {source}: option {option}: expected a regex, got {value!r}")
    try:
        return re.compile(value)
    except re.error as err:
        raise IngestError(f"source {source}: option {option}: invalid regex: {err}") from None


@dataclass(frozen=True)
class RunLogOptions:
    scheduler: str
    cluster: str
    job_from_path: re.Pattern[str]
    marker: re.Pattern[str]
    timestamps: tuple[re.Pattern[str], ...]
    timestamp_format: str | None
    zone: ZoneInfo

    @staticmethod
    def parse(options: dict[str, Any], source: str) -> RunLogOptions:
        """Validate a run_logs source's options; IngestError names the option and problem."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise IngestError(
                f"source {source}: unknown option(s) {', '.join(unknown)} "
                f"(run_logs options: {', '.join(OPTIONS)})"
            )
        scheduler = options.get("scheduler")
        if scheduler not in SCHEDULERS:
            raise IngestError(
                f"source {source}: option scheduler: expected one of "
                f"{', '.join(SCHEDULERS)}, got {scheduler!r}"
            )
        cluster = options.get("cluster")
        if not isinstance(cluster, str) or not cluster:
            raise IngestError(f"source {source}: option cluster: required (the runs' cluster)")
        job = _regex(
            options.get("job_from_path", DEFAULT_JOB_FROM_PATH[scheduler]), "job_from_path", source
        )
        groups = set(job.groupindex)
        if scheduler == "slurm" and not (
            "job_id_raw" in groups or {"array_job_id", "array_task_id"} <= groups
        ):
            raise IngestError(
                f"source {source}: option job_from_path: a slurm pattern needs a named group "
                "job_id_raw (or array_job_id and array_task_id)"
            )
        if scheduler == "kubernetes" and not {"namespace", "pod"} <= groups:
            raise IngestError(
                f"source {source}: option job_from_path: a kubernetes pattern needs named "
                "groups namespace and pod"
            )
        raw_ts = options.get("timestamp", DEFAULT_TIMESTAMP[scheduler])
        ts_list = [raw_ts] if isinstance(raw_ts, str) else raw_ts
        if not isinstance(ts_list, list | tuple) or not ts_list:
            raise IngestError(
                f"source {source}: option timestamp: expected a regex or a list of regexes"
            )
        timestamps = tuple(_regex(t, "timestamp", source) for t in ts_list)
        for t in timestamps:
            if "ts" not in t.groupindex:
                raise IngestError(
                    f"source {source}: option timestamp: {t.pattern!r} has no group named ts"
                )
        fmt = options.get("timestamp_format")
        if fmt is not None and (not isinstance(fmt, str) or "%" not in fmt):
            raise IngestError(
                f"source {source}: option timestamp_format: expected a strptime format, got {fmt!r}"
            )
        tz_name = str(options.get("timezone", "UTC"))
        try:
            zone = ZoneInfo(tz_name)
        except (ZoneInfoNotFoundError, ValueError):
            raise IngestError(
                f"source {source}: option timezone: unknown time zone {tz_name!r}"
            ) from None
        return RunLogOptions(
            scheduler=scheduler,
            cluster=cluster,
            job_from_path=job,
            marker=_regex(options.get("marker", DEFAULT_MARKER), "marker", source),
            timestamps=timestamps,
            timestamp_format=fmt,
            zone=zone,
        )


# --------------------------------------------------------------------------- times


def parse_log_time(text: str, zone: ZoneInfo, fmt: str | None = None) -> datetime:
    """A log line's time as an aware UTC datetime. Without `fmt`: ISO-like
    `YYYY-MM-DD[ T]HH:MM:SS[.f|,f][Z|UTC|±HH[:]MM]` (fractions beyond microseconds are cut,
    as RFC3339Nano's nanoseconds) or `MM/DD/YYYY HH:MM:SS`. Times without an offset are in
    `zone`. Raises ValueError."""
    text = text.strip()
    if fmt is not None:
        dt = datetime.strptime(text, fmt)
    else:
        m = _PARSE_ISO.match(text)
        if m:
            y, mo, d, h, mi, s, frac, off = m.groups()
            micro = int((frac or "0")[:6].ljust(6, "0"))
            dt = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro)
            if off in ("Z", "UTC"):
                dt = dt.replace(tzinfo=UTC)
            elif off:
                sign = -1 if off[0] == "-" else 1
                digits = off[1:].replace(":", "")
                delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
                dt = dt.replace(tzinfo=timezone(sign * delta))
        else:
            dt = datetime.strptime(text, _US_FORMAT)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=zone, fold=0)
    return dt.astimezone(UTC)


def _marker_time(line: str, start: int, opts: RunLogOptions) -> datetime:
    """The time of a marker line: the first `timestamp` pattern that finds one, searched in the
    terminal segment (between carriage returns, as progress bars write them) of the marker."""
    seg_start = line.rfind("\r", 0, start) + 1
    seg_end = line.find("\r", start)
    segment = line[seg_start : seg_end if seg_end >= 0 else len(line)]
    for pattern in opts.timestamps:
        m = pattern.search(segment)
        if m and m.group("ts"):
            try:
                return parse_log_time(m.group("ts"), opts.zone, opts.timestamp_format)
            except ValueError:
                raise _LineError(
                    f"checkpoint marker with an unparseable time {m.group('ts')!r}"
                ) from None
    raise _LineError("checkpoint marker without a time (option timestamp)")


# --------------------------------------------------------------------------- files


def _lines(path: Path) -> Iterator[tuple[str, str | None]]:
    """The file's lines (gzip by its magic number) as UTF-8 text, each with the reason it is
    not valid UTF-8 (its bytes shown escaped in the text), else None."""
    try:
        with path.open("rb") as probe:
            gz = probe.read(2) == b"\x1f\x8b"
        fh = gzip.open(path, "rb") if gz else path.open("rb")
        with fh:
            for raw in fh:
                try:
                    text, bad = raw.decode("utf-8"), None
                except UnicodeDecodeError as err:
                    text = raw.decode("utf-8", errors="backslashreplace")
                    shown = raw[err.start : err.end].decode("utf-8", errors="backslashreplace")
                    bad = f"invalid UTF-8 bytes {shown} in the line"
                yield text.rstrip("\n").rstrip("\r"), bad
    except OSError as err:
        raise IngestError(f"cannot read file: {err.strerror or err}", file=path) from None
    except (EOFError, zlib.error) as err:
        raise IngestError(f"corrupt or truncated gzip data: {err}", file=path) from None


@dataclass(frozen=True)
class JobKey:
    job_id_raw: str | None = None
    job_id: str | None = None
    namespace: str | None = None
    pod: str | None = None


def job_of(path: str, opts: RunLogOptions) -> JobKey | None:
    """Which job a log file belongs to, from its path; None when the path matches no job."""
    m = opts.job_from_path.search(path)
    if not m:
        return None
    g = m.groupdict()
    if opts.scheduler == "kubernetes":
        if not g.get("namespace") or not g.get("pod"):
            return None
        return JobKey(namespace=g["namespace"], pod=g["pod"])
    if g.get("job_id_raw"):
        return JobKey(job_id_raw=g["job_id_raw"])
    if g.get("array_job_id") and g.get("array_task_id"):
        return JobKey(job_id=f"{g['array_job_id']}_{g['array_task_id']}")
    return None


def _quarantine_schema() -> pl.Schema:
    return pl.Schema({**polars_schema(QUARANTINE_TABLE), PARTITION_DAY: pl.Date()})


def read_run_log(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | RunLogOptions,
) -> ReadResult:
    """The checkpoint markers of one job log file. `x_line_number` is the 1-based line; the
    quarantine frame carries `x_partition_day` (the rejected marker's UTC day when its time is
    known, else null)."""
    path = Path(path)
    opts = options if isinstance(options, RunLogOptions) else RunLogOptions.parse(options, source)
    file = str(path)
    job = job_of(path.as_posix(), opts)
    rows: dict[str, list[Any]] = {n: [] for n in polars_schema(TABLE)}
    q: dict[str, list[Any]] = {n: [] for n in _quarantine_schema()}

    def reject(n: int, reason: str, raw: str, day: date | None) -> None:
        for k, v in zip(q, (source, file, n, reason, raw[:MESSAGE_CHARS], day), strict=True):
            q[k].append(v)

    for n, (line, not_text) in enumerate(_lines(path), start=1):
        m = opts.marker.search(line)
        if not m:
            continue  # other lines are the job's own output: bytes in them are not data
        if not_text:
            reject(n, f"checkpoint marker with {not_text}", line, None)
            continue
        try:
            at = _marker_time(line, m.start(), opts)
        except _LineError as err:
            reject(n, str(err), line, None)
            continue
        if job is None:
            reject(
                n,
                "checkpoint marker in a file whose path matches no job (option job_from_path)",
                line,
                at.date(),
            )
            continue
        row = {
            "scheduler": opts.scheduler,
            "cluster": opts.cluster,
            "job_id_raw": job.job_id_raw,
            "job_id": job.job_id,
            "namespace": job.namespace,
            "pod": job.pod,
            "checkpoint_at": at,
            "message": line.strip()[:MESSAGE_CHARS],
            "x_source": source,
            "x_source_file": file,
            "x_line_number": n,
        }
        for k, v in row.items():
            rows[k].append(v)
    warnings = []
    if job is None:
        warnings.append(f"{file}: {UNMATCHED_WARNING}")
    return ReadResult(
        rows=pl.DataFrame(rows, schema=polars_schema(TABLE)),
        quarantine=pl.DataFrame(q, schema=_quarantine_schema()),
        warnings=warnings,
        files=[file],
    )
