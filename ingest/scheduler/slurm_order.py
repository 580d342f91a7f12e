"""Which undated sacct export of a job is the latest (docs/landing.md, "Slurm").

Files with a day (`{date}`, a date in the name, option `snapshot_date`) are ordered by it. Files
without one are ordered by when they were written (`x_exported_at`: the file's mtime), then by
the rows themselves (a row with an End beats a RUNNING one, a later End an earlier one): see
int_runs__slurm. An mtime says when a file was last written, not when sacct ran (a copy can
reset it), so the ingest says when it had to rely on it: `export_order_check` raises a
`slurm_export_order_guessed` finding for the allocations that appear in more than one undated
file.
"""

from __future__ import annotations

import polars as pl

from ingest.core.common import ReadResult
from ingest.core.report import IngestReport

CHECK = "slurm_export_order_guessed"


def export_order_check(result: ReadResult, report: IngestReport) -> None:
    """Add a finding when an allocation (cluster, JobIDRaw, Start, or Submit while pending)
    appears in more than one file that has no day: which of them is latest is then read from
    the files' mtimes (ties: the rows' End and State)."""
    rows = result.rows.filter(pl.col("x_snapshot_date").is_null())
    if rows.height == 0:
        return
    key = ["cluster", "job_id_raw", "start", "_submit"]
    shared = (
        rows.with_columns(_submit=pl.when(pl.col("start").is_null()).then(pl.col("submit")))
        .group_by(key)
        .agg(
            pl.col("x_source_file").n_unique().alias("files"),
            pl.col("x_exported_at").n_unique().alias("times"),
            pl.col("job_id").first(),
        )
        .filter(pl.col("files") > 1)
    )
    if shared.height == 0:
        return
    tied = shared.filter(pl.col("times") < pl.col("files")).height
    files = (
        rows.filter(pl.col("job_id_raw").is_in(shared["job_id_raw"].implode()))["x_source_file"]
        .unique()
        .sort()
    )
    example = shared.sort("job_id")["job_id"][0]
    message = (
        f"{shared.height} allocations appear in more than one sacct export without a date "
        f"(e.g. job {example}, in {', '.join(files.head(3).to_list())}"
        + (" ..." if files.len() > 3 else "")
        + "); the latest was chosen by the files' modification times, then the rows' End and "
        "State"
        + (f" ({tied} with files written at the same time: by End and State alone)" if tied else "")
        + ". Put the export day in the file names or use `{date}` to make the order certain"
    )
    report.warn(CHECK, message, "info", count=shared.height)
