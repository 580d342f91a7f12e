"""The fields of sacct output: Slurm states, times, elapsed times, memory, TRES/GRES GPU counts,
hostlists and array job ids (pure parsers, shared by the job and node-event readers)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ingest.core.errors import IngestError


class _RowError(ValueError):
    """A row that breaks a rule: it goes to quarantine with this reason."""


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


def _zone(name: str) -> ZoneInfo | None:
    if name.upper() == "UTC":
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise IngestError(f"option timezone: unknown time zone {name!r}") from None


def sacct_time(value: str, field: str, tz: ZoneInfo | None) -> datetime | None:
    """A sacct / sacctmgr time (`YYYY-MM-DDTHH:MM:SS`, in `tz`, UTC when None) as UTC; the
    null words (`Unknown`, `None`, ...) are None. A malformed or impossible time
    (`2026-11-29T25:61:00`, `2026-11-31T00:00:00`) is a row error naming the field."""
    value = value.strip()
    if value in _NULL_TIMES:
        return None
    if not _TIME.match(value):
        raise _RowError(f"unparseable time in {field}: {value!r}")
    try:
        dt = datetime.fromisoformat(value)
    except ValueError as err:
        raise _RowError(f"invalid time in {field}: {value!r} ({err})") from None
    if tz is None:
        return dt.replace(tzinfo=UTC)
    return dt.replace(tzinfo=tz).astimezone(UTC)
