"""Duplicate rows within one landed partition: dropped, counted and reported.

A kind whose rows have a natural key (`KindSpec.unique_key`, e.g. DCGM: the series' labels,
`hpc_job` and pod included, and the sample time) lands each key once per partition. The same
file delivered twice, or scrapes that overlap, would otherwise land a sample twice and block
the run at the staging uniqueness test, naming no file.

The partition's files are landed one at a time (ingest/core/partitions.py), so this keeps only
a summary per file: each series (the key without `time`) and its first and last time. A file's
rows are compared with an earlier file only when they share a series whose time ranges
overlap; that earlier file is then read again (the rare case), so memory stays bounded by one
file. The first occurrence wins: earlier files (in sorted order), then earlier lines.

The summaries tell series apart by a 64-bit hash of their columns (`_h`), not by the columns
themselves: grouping a DCGM file's 115 k rows by its twelve text columns cost about twice as
much. The hash only decides where to look: two series that happened to share one would be
summarised together, which can only make the exact comparisons run (a repeat inside the file,
an overlap with an earlier file), and those compare every key column. No repeat is dropped or
kept on a hash.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

TIME = "time"


@dataclass
class Duplicates:
    """Dropped duplicates of one partition: `count` rows, and how many per file that held them
    (`by_file`), with `differing` the duplicates whose value was not the kept row's."""

    count: int = 0
    differing: int = 0
    by_file: dict[str, int] = field(default_factory=dict)


class DuplicateFilter:
    """Feed the partition's files in landing order to `keep`; it returns each file's rows
    without the duplicates of rows already kept, and counts them in `found`."""

    def __init__(self, key: tuple[str, ...], reread: Callable[[Path], pl.DataFrame]) -> None:
        self.key = list(key)
        self.series = [c for c in key if c != TIME]
        self.reread = reread
        self.files: list[Path] = []  # earlier files, in landing order
        # every earlier file's series summary, `_file` its index in `files`
        self.seen: pl.DataFrame | None = None
        self.found = Duplicates()

    def _summary(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Per series (`_h`, the hash of its columns): its first and last time (`_lo`, `_hi`),
        rows (`_n`) and distinct times (`_times`)."""
        series = rows.select(self.series).hash_rows()
        if TIME not in self.key:
            return rows.select(_h=series).group_by("_h").agg(_n=pl.len())
        return (
            rows.select(TIME, _h=series)
            .group_by("_h")
            .agg(
                _lo=pl.col(TIME).min(),
                _hi=pl.col(TIME).max(),
                _n=pl.len(),
                _times=pl.col(TIME).n_unique(),
            )
        )

    def _repeats_inside(self, rows: pl.DataFrame, summary: pl.DataFrame) -> bool:
        """Whether a key repeats within `rows` (a series with fewer distinct times than rows;
        without time in the key, a series on more than one row)."""
        if TIME not in self.key:
            return summary.height < rows.height
        return bool(summary.select((pl.col("_n") > pl.col("_times")).any()).item())

    def _overlapping(self, summary: pl.DataFrame) -> list[int]:
        """The earlier files (indices, in landing order) sharing a series (hash) with `summary`
        whose time ranges overlap: one join against all earlier files' summaries."""
        if self.seen is None:
            return []
        shared = summary.join(self.seen, on="_h", how="inner")
        if TIME in self.key and shared.height:
            shared = shared.filter(
                (pl.col("_lo") <= pl.col("_hi_right")) & (pl.col("_lo_right") <= pl.col("_hi"))
            )
        return sorted(set(shared["_file"].to_list()))

    def _count(self, file: str, n: int, differing: int) -> None:
        if n:
            self.found.count += n
            self.found.differing += differing
            self.found.by_file[file] = self.found.by_file.get(file, 0) + n

    def keep(self, path: Path, rows: pl.DataFrame, value: str | None = "value") -> pl.DataFrame:
        """`rows` (one file's) without duplicates of each other or of earlier files' rows."""
        if rows.height == 0:
            return rows
        summary = self._summary(rows)
        if self._repeats_inside(rows, summary):  # rare: find them row by row
            first = pl.struct(self.key).is_first_distinct()
            inside = rows.filter(~first)
            kept = rows.filter(first)
            self._count(str(path), inside.height, self._differing(inside, kept, value))
            rows = kept
            summary = self._summary(rows)
        for index in self._overlapping(summary):
            if rows.height == 0:
                break
            old_path = self.files[index]
            old = (
                self.reread(old_path)
                .select(self.key + ([value] if value else []))
                .unique(self.key, keep="first")
            )
            dup = rows.join(old.select(self.key), on=self.key, how="semi", nulls_equal=True)
            if dup.height:
                rows = rows.join(old.select(self.key), on=self.key, how="anti", nulls_equal=True)
                self._count(str(path), dup.height, self._differing(dup, old, value))
                summary = self._summary(rows) if rows.height else summary
        summary = summary.select(
            "_h",
            *(["_lo", "_hi"] if TIME in self.key else []),
            _file=pl.lit(len(self.files), pl.UInt32),
        )
        self.files.append(path)
        self.seen = summary if self.seen is None else pl.concat([self.seen, summary])
        return rows

    def _differing(self, dup: pl.DataFrame, kept: pl.DataFrame, value: str | None) -> int:
        """How many of `dup` carry another value than the row of `kept` with their key."""
        if not value:
            return 0
        ref = kept.select(*self.key, pl.col(value).alias("_kept")).unique(self.key, keep="first")
        both = dup.join(ref, on=self.key, how="inner", nulls_equal=True)
        return both.filter(pl.col(value).ne_missing(pl.col("_kept"))).height


def drop_duplicates(
    rows: pl.DataFrame, key: tuple[str, ...], value: str | None = "value"
) -> tuple[pl.DataFrame, Duplicates]:
    """Rows already in memory (a whole location's, in file and line order) without repeats of
    `key`, and what was dropped, per file (`x_source_file`)."""
    found = Duplicates()
    if rows.height == 0:
        return rows, found
    first = pl.struct(list(key)).is_first_distinct()
    dup = rows.filter(~first)
    if dup.height == 0:
        return rows, found
    kept = rows.filter(first)
    found.count = dup.height
    found.by_file = dict(dup.group_by("x_source_file").len().iter_rows())
    if value:
        ref = kept.select(*key, pl.col(value).alias("_kept"))
        both = dup.join(ref, on=list(key), how="inner", nulls_equal=True)
        found.differing = both.filter(pl.col(value).ne_missing(pl.col("_kept"))).height
    return kept, found
