"""`sacctmgr show event format=NodeName,TimeStart,TimeEnd,State,Reason --parsable2` output
→ the landing table `slurm_node_events`.

One row per event line: `cluster, node, time_start, time_end (null while the event is open:
TimeEnd `Unknown`), state (as printed, e.g. `DOWN`, `DOWN*`, `IDLE+DRAIN`), reason` + lineage.
Cluster events (empty NodeName) are landed with `node` null. Rows that break a rule (wrong
field count, unparseable time, empty State) go to quarantine with the reason.

The file needs its header line (`sacctmgr -P` prints it); the column order is the header's, so
other `format=` lists work as long as NodeName, TimeStart and State are in it. `Reason` may
itself contain the delimiter when it is the last column: the rest of the line is the reason.

Options (the slurm source's options): `delimiter` (default `|`), `timezone` (the zone sacctmgr
printed times in, default UTC), `cluster` (fills the cluster column; else the `Cluster` column
when present).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, quarantine_frame
from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.core.text import encoding_option, read_text
from ingest.scheduler.slurm_fields import _RowError, _zone, sacct_time

TABLE = "slurm_node_events"
REQUIRED = ("nodename", "timestart", "state")


def parse_node_events(
    text: str,
    *,
    source: str,
    file: str,
    options: dict[str, Any] | None = None,
    bad_lines: Mapping[int, str] | None = None,
) -> ReadResult:
    """Parse `sacctmgr show event --parsable2` output already decoded to text; `bad_lines`
    (lines that are not valid text, `ingest.core.text`) are quarantined with their reason."""
    options = options or {}
    delim = str(options.get("delimiter", "|"))
    if not delim:
        raise IngestError("option delimiter: must not be empty", file=file)
    tz = _zone(str(options.get("timezone", "UTC")))
    cluster_opt = options.get("cluster")
    columns: list[str] | None = None
    out: list[list[Any]] = []
    line_numbers: list[int] = []
    q_lines: list[int] = []
    q_reasons: list[str] = []
    q_raws: list[str] = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if bad_lines and lineno in bad_lines and columns is not None:
            q_lines.append(lineno)
            q_reasons.append(bad_lines[lineno])
            q_raws.append(line)
            continue
        if not line.strip():
            continue
        fields = line.split(delim)
        if columns is None:
            names = [c.strip().lower() for c in fields]
            if names and names[-1] == "" and len(names) > 1:
                names = names[:-1]  # --parsable: trailing delimiter
            missing = [c for c in REQUIRED if c not in names]
            if missing:
                raise IngestError(
                    f"not a `sacctmgr show event` header: lacks {missing} (got {names})",
                    file=file,
                    line=lineno,
                )
            columns = names
            continue
        if [c.strip().lower() for c in fields[: len(columns)]] == columns:
            continue  # a repeated header (concatenated exports)
        if len(fields) == len(columns) + 1 and fields[-1] == "":
            fields = fields[:-1]
        if len(fields) > len(columns) and columns[-1] == "reason":
            fields = fields[: len(columns) - 1] + [delim.join(fields[len(columns) - 1 :])]
        if len(fields) != len(columns):
            q_lines.append(lineno)
            q_reasons.append(f"expected {len(columns)} fields, found {len(fields)}")
            q_raws.append(line)
            continue
        rec = {c: v.strip() for c, v in zip(columns, fields, strict=True)}
        try:
            state = rec.get("state", "")
            if not state:
                raise _RowError("empty State")
            start = sacct_time(rec.get("timestart", ""), "TimeStart", tz)
            if start is None:
                raise _RowError("TimeStart is unknown")
            end = sacct_time(rec.get("timeend", ""), "TimeEnd", tz)
            if end is not None and end < start:
                raise _RowError("TimeEnd is before TimeStart")
        except _RowError as err:
            q_lines.append(lineno)
            q_reasons.append(str(err))
            q_raws.append(line)
            continue
        cluster = str(cluster_opt) if cluster_opt is not None else (rec.get("cluster") or None)
        out.append(
            [cluster, rec.get("nodename") or None, start, end, state, rec.get("reason") or None]
        )
        line_numbers.append(lineno)
    if columns is None:
        raise IngestError("empty file: no `sacctmgr show event` header", file=file)
    names = ["cluster", "node", "time_start", "time_end", "state", "reason"]
    rows = pl.DataFrame(
        {
            **{n: [r[i] for r in out] for i, n in enumerate(names)},
            "x_source": [source] * len(out),
            "x_source_file": [file] * len(out),
            "x_line_number": line_numbers,
        },
        schema=polars_schema(TABLE),
    )
    quarantine = quarantine_frame(source, file, q_lines, q_reasons, q_raws)
    return ReadResult(rows, quarantine, files=[file])


def read_node_events(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one `sacctmgr show event --parsable2` output file (plain or gzip)."""
    path = Path(path)
    decoded = read_text(path, encoding_option(options))
    return parse_node_events(
        decoded.text,
        source=source,
        file=str(path),
        options=options,
        bad_lines=decoded.bad_lines,
    )
