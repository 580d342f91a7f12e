"""The bad-input corpus where marts matter (issue 11): independent corruptions of DIFFERENT
sources of the small generated fleet, batched into ONE pipeline run whose marts must equal the
clean fleet's (`pipeline_home`, shared with the rest of the suite); a failing run that must
leave the published warehouse byte for byte as it was. (A second run on a busy home and an
interrupted run: tests/test_run_guard.py.)

Each `Corruption` edits one source's files in a copy of the fleet and is handled by a reader
(quarantined or dropped), so nothing it adds may reach a mart. A corruption waiting for a fix
carries `pending` and is left out of the batch (FLEETLEDGER_CORPUS_PENDING=1 adds it).
Marked `warehouse` (it runs the pipeline): `pytest -m "not warehouse"` skips it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import pytest

from fleetledger.pipeline import PipelineError, run_pipeline

RUN_PENDING = os.environ.get("FLEETLEDGER_CORPUS_PENDING") == "1"
D2 = "2026-10-03"  # the fleet's second day


@dataclass(frozen=True)
class Corruption:
    source: str  # the configured source whose files it edits
    name: str
    apply: Callable[[Path], None]  # edits the files under the home's sources/
    pending: str | None = None


def _append(path: Path, lines: list[str]) -> None:
    text = path.read_text()
    path.write_text(text + ("" if text.endswith("\n") else "\n") + "\n".join(lines) + "\n")


def _append_gz(path: Path, lines: list[str], cut_last: int = 0) -> None:
    text = gzip.decompress(path.read_bytes()).decode()
    extra = "\n".join(lines) + "\n"
    data = (text + extra).encode()
    path.write_bytes(gzip.compress(data[: len(data) - cut_last] if cut_last else data))


def _first_sample(path: Path) -> str:
    return next(
        line
        for line in gzip.decompress(path.read_bytes()).decode().splitlines()
        if line.startswith("DCGM_FI_DEV_GPU_UTIL{")
    )


def _labels(line: str) -> str:
    return line[line.index("{") : line.index("}") + 1]


def _stamp(line: str) -> int:
    return int(line.rsplit(" ", 1)[1])


def _onprem_scrape(home: Path) -> Path:
    return home / "sources/onprem/dcgm" / D2 / "dgx-02.prom.gz"


def _dcgm_handled(home: Path) -> None:
    f = _onprem_scrape(home)
    s = _first_sample(f)
    _append_gz(
        f,
        [
            f"DCGM_FI_DEV_FB_USED{_labels(s)} 9223372036854775794 {_stamp(s)}",  # int64 blank
            f"DCGM_FI_DEV_FAN_SPEED 0 {_stamp(s)}",  # no GPU labels: quarantined
            "garbage{ line",  # unparseable: quarantined
        ],
    )


def _dcgm_cut_timestamp(home: Path) -> None:
    f = home / "sources/aws/dcgm" / D2 / "aws-p5-01.prom.gz"
    s = _first_sample(f)
    # the last line cut inside its timestamp (13 digits -> 4): a 1970 sample
    _append_gz(f, [f"DCGM_FI_DEV_GPU_UTIL{_labels(s)} 50 {_stamp(s) + 30_000}"], cut_last=10)


def _dcgm_blanks_and_impossible(home: Path) -> None:
    f = home / "sources/gcp/dcgm" / D2 / "gke-ml-a3-pool-6917.prom.gz"
    s = _first_sample(f)
    t = _stamp(s) + 30_000  # between two scrapes: a sample of its own
    _append_gz(
        f,
        [
            f"DCGM_FI_DEV_FB_USED{_labels(s)} 2147483632 {t}",  # int32 blank
            f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{_labels(s)} 140737488355328 {t}",  # fp64
            f"DCGM_FI_DEV_POWER_USAGE{_labels(s)} 5000 {t}",  # over 2 kW
            f"DCGM_FI_DEV_GPU_UTIL{_labels(s)} 150 {t}",  # over 100 %
        ],
    )


def _dcgm_duplicated_hour(home: Path) -> None:
    f = home / "sources/gcp/dcgm" / D2 / "gke-ml-a3-pool-93c7.prom.gz"
    lines = gzip.decompress(f.read_bytes()).decode().splitlines()
    samples = [x for x in lines if x and not x.startswith("#")]
    first = _stamp(samples[0])
    hour = [x for x in samples if first <= _stamp(x) < first + 3_600_000]
    _append_gz(f, hour)


def _sacct(home: Path, cluster: str) -> Path:
    return home / f"sources/{cluster}/sacct/sacct-{D2}.txt"


def _slurm_handled(home: Path) -> None:
    f = _sacct(home, "onprem")
    fields = f.read_text().splitlines()[1].split("|")
    hour25 = [*fields]
    hour25[0] = hour25[1] = "99001"
    hour25[12] = f"{D2}T25:61:00"  # Start: an impossible time (finding 7, merged)
    _append(f, ["99000|99000|onprem|broken", "|".join(hour25)])
    events = home / "sources/onprem/sacct/events.txt"
    _append(events, [f"dgx-04|{D2}T25:00:00|{D2}T03:00:00|DOWN|impossible start"])


def _slurm_end_2099(home: Path) -> None:
    f = _sacct(home, "aws")
    fields = f.read_text().splitlines()[1].split("|")
    fields[0] = fields[1] = "99002"
    fields[13] = "2099-01-01T00:00:00"  # End
    fields[16] = "COMPLETED"
    _append(f, ["|".join(fields)])


def _power_handled(home: Path) -> None:
    f = home / f"sources/onprem/power/power-{D2}.csv"
    _append(f, [f"{D2}T00:00:30Z,dc1,dc1-utility-main,facility,-13.5"])


def _gcp_billing_handled(home: Path) -> None:
    f = next((home / "sources/gcp/billing").glob(f"*{D2}.jsonl"))
    row = json.loads(f.read_text().splitlines()[0])
    row["invoice"] = {}
    _append(f, ["{not json", json.dumps(row)])


def _pod_without_status(home: Path) -> None:
    f = home / f"sources/gcp/k8s/pods-{D2}.json"
    dump = json.loads(f.read_text())
    item = json.loads(json.dumps(dump["items"][0]))
    item["metadata"]["name"] += "-nostatus"
    item["metadata"]["uid"] = "corpus-nostatus"
    del item["status"]
    dump["items"].append(item)
    f.write_text(json.dumps(dump))


def _run_log_marker_without_time(home: Path) -> None:
    f = sorted((home / "sources/onprem/logs").glob("slurm-*.out"))[0]
    _append(f, ["Saving model checkpoint to /checkpoints/corpus/checkpoint-1"])


CORRUPTIONS = [
    Corruption("onprem-dcgm", "int64-blank-unlabelled-and-garbage-lines", _dcgm_handled),
    Corruption("onprem-slurm", "short-line-hour-25-and-event-hour-25", _slurm_handled),
    Corruption("onprem-power", "negative-kw", _power_handled),
    Corruption("gcp-billing", "bad-json-and-no-invoice-month", _gcp_billing_handled),
    Corruption("onprem-logs", "marker-without-time", _run_log_marker_without_time),
    Corruption("aws-dcgm", "line-cut-inside-timestamp", _dcgm_cut_timestamp),
    Corruption("gke-dcgm", "blanks-and-impossible-values", _dcgm_blanks_and_impossible),
    Corruption("aws-slurm", "end-in-2099", _slurm_end_2099),
    Corruption("gke-pods", "pod-without-status", _pod_without_status),
    Corruption("gke-dcgm", "duplicated-hour", _dcgm_duplicated_hour),
]
#: the marts a corruption of the sources must not move (data-health and quarantine marts
#: count the rejected rows, so they are left out)
MARTS = (
    "dim_gpus",
    "dim_nodes",
    "fct_billing",
    "fct_daily_spend",
    "fct_gpu_hours",
    "fct_idle_gpu_hours",
    "fct_pue_daily",
    "fct_run_costs",
    "fct_runs",
    "fct_stragglers",
    "fct_team_gpu_hours_daily",
    "fct_xid_events",
)


def mart_numbers(home: Path) -> dict[str, float | int | str | None]:
    """Per mart of the home's published warehouse: the row count, the sum of every numeric
    column, the min and max of every other column (as text, the home's own path written
    `<home>`: lineage names the source files)."""
    con = duckdb.connect(str(home / "warehouse.duckdb"), read_only=True)
    try:
        out: dict[str, float | int | str | None] = {}
        for mart in MARTS:
            cols = con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_name = ? order by ordinal_position",
                [mart],
            ).fetchall()
            exprs = ["count(*)"]
            names = [f"{mart}.rows"]
            for col, kind in cols:
                numeric = re.match(r"(?i)(big|small|tiny|u)?int|double|float|decimal|real", kind)
                if numeric:
                    exprs.append(f'sum("{col}")::double')
                    names.append(f"{mart}.sum({col})")
                else:
                    exprs += [f'min("{col}")::varchar', f'max("{col}")::varchar']
                    names += [f"{mart}.min({col})", f"{mart}.max({col})"]
            values = con.execute(f"select {', '.join(exprs)} from {mart}").fetchone()
            assert values is not None
            values = tuple(
                v.replace(str(home), "<home>") if isinstance(v, str) else v for v in values
            )
            out.update(zip(names, values, strict=True))
        return out
    finally:
        con.close()


def _differ(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a != b


def test_batched_corruptions_leave_the_marts_unchanged(
    pipeline_home: Path,
    small_fleet: Path,
    fleet_window: tuple[date, date],
    tmp_path: Path,
) -> None:
    """One pipeline run over the fleet with every handled corruption applied (each in its own
    source, or its own file of a source): the marts equal the clean run's."""
    applied = [c for c in CORRUPTIONS if not c.pending or RUN_PENDING]
    home = tmp_path / "home"
    shutil.copytree(small_fleet, home)
    for c in applied:
        c.apply(home)
    result = run_pipeline(home, *fleet_window)
    assert result.published is not None
    clean = mart_numbers(pipeline_home)
    corrupted = mart_numbers(home)
    moved = {k: (clean[k], corrupted[k]) for k in clean if _differ(clean[k], corrupted[k])}
    assert moved == {}, f"corruptions {[c.name for c in applied]} moved {moved}"


def test_failed_run_leaves_the_published_warehouse(pipeline_home: Path, tmp_path: Path) -> None:
    """A run whose source cannot be read fails naming the file, and the published warehouse
    is byte for byte the one before (its ingest fails, so no build runs)."""
    home = tmp_path / "home"
    shutil.copytree(pipeline_home, home)
    published = home / "warehouse.duckdb"
    before = hashlib.sha256(published.read_bytes()).hexdigest()
    (home / f"sources/gcp/k8s/pods-{D2}.json").write_text('{"kind": "List",\n "items": [oops')
    with pytest.raises(PipelineError) as err:
        run_pipeline(home, date.fromisoformat(D2), date.fromisoformat(D2), sources=["gke-pods"])
    assert re.search(rf"pods-{D2}\.json, line 2: not valid JSON", str(err.value))
    assert hashlib.sha256(published.read_bytes()).hexdigest() == before


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
