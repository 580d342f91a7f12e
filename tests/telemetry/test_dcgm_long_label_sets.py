"""A long export's label sets (ingest/telemetry/dcgm_labels.py, `label_sets`): each distinct
combination of the label columns, numbered in first-seen order, and every row's number. The
hash that finds them is checked row by row: with every row forced onto one hash, the sets and
numbers are the same."""

from __future__ import annotations

import polars as pl

from ingest.telemetry.dcgm_labels import label_sets

KEYS = ["metric", "hostname", "gpu", "hpc_job"]
ROWS = pl.DataFrame(
    {
        "metric": ["util", "power", "util", "util", "power", "util", "util"],
        "hostname": ["n1", "n1", "n1", "n2", "n1", "n1", "n1"],
        "gpu": [0, 0, 0, 0, 0, 1, 0],
        "hpc_job": ["17", "17", None, "17", "17", None, "17"],
        "value": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    }
)


def test_label_sets_numbered_in_first_seen_order(row_hashes: str) -> None:
    sets, sid = label_sets(ROWS, KEYS)
    # a null job is a set of its own, apart from job 17 on the same GPU
    assert sets.rows() == [
        (0, "util", "n1", 0, "17"),
        (1, "power", "n1", 0, "17"),
        (2, "util", "n1", 0, None),
        (3, "util", "n2", 0, "17"),
        (4, "util", "n1", 1, None),
    ]
    assert sid.to_list() == [0, 1, 2, 3, 1, 4, 0]
